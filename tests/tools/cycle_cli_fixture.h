// What the tests of the real `backendlab cycle` share: the fixture that
// sees orphans of the tool, a small run's flags, a long run signalled
// while it runs, and the helpers that read its output and wait for it.
#ifndef BACKENDLAB_TESTS_TOOLS_CYCLE_CLI_FIXTURE_H_
#define BACKENDLAB_TESTS_TOOLS_CYCLE_CLI_FIXTURE_H_

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/run_program.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/spawned_tool.h"

namespace backendlab::tools {

inline int CountLinesContaining(const std::string& text, const std::string& part) {
  const std::vector<std::string> lines = test_util::Lines(text);
  return static_cast<int>(
      std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; }));
}

// The shared fixture: a private dir_ and TMPDIR per test. Orphans of the
// tool (a postmaster or backend it failed to reap) are reparented to this
// test process instead of init, so they show up as its children.
class CycleCliTest : public CliTest {
 protected:
  static void SetUpTestSuite() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

  // No process of the tool outlived it; kills any that did, so that a failure
  // leaves nothing behind.
  void ExpectNoProcessLeft() {
    const std::vector<pid_t> left = test_util::ChildrenOf(getpid());
    EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the tool outlived it";
    for (pid_t pid : left) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

inline const std::vector<std::string> kSmallRun = {"--shared-buffers=128MB", "--connections=10", "--warmup=2",
                                                   "--work-lookups=10"};

// `cycle args...` with kSmallRun's flags after them.
inline std::vector<std::string> Cycle(std::vector<std::string> args) {
  args.insert(args.begin(), "cycle");
  args.insert(args.end(), kSmallRun.begin(), kSmallRun.end());
  return args;
}

inline std::optional<std::string> FindSocket(const std::string& tmpdir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(tmpdir, ec)) {
    const std::string socket = entry.path().string() + "/postmaster.sock";
    if (std::filesystem::exists(socket, ec)) return socket;
  }
  return std::nullopt;
}

inline std::vector<std::string> LongCycle() {
  return {BACKENDLAB_CLI_PATH, "cycle", "--duration=60s", "--shared-buffers=128MB", "--work-lookups=10", "--warmup=2"};
}

// Waits until `tool` is running: its socket bound and its postmaster forked.
// Generous deadlines: an ASan build on a loaded VM starts slowly. The
// socket's path, or nullopt (with a failure) if it never got there.
inline std::optional<std::string> WaitUntilRunning(test_util::SpawnedTool& tool, const std::string& tmpdir,
                                                   const std::string& dir) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::optional<std::string> socket;
  while (std::chrono::steady_clock::now() < deadline && !tool.Poll()) {
    if (!socket) socket = FindSocket(tmpdir);
    if (socket && test_util::ChildrenNamed(tool.pid(), "postmaster").size() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(tool.Poll()) << "the tool exited early: " << test_util::ReadFile(dir + "/stderr");
  EXPECT_TRUE(socket) << "no socket appeared in " << tmpdir;
  if (tool.Poll() || !socket) return std::nullopt;
  // Let connections come and go so that the signal lands mid-cycle.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return socket;
}

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TESTS_TOOLS_CYCLE_CLI_FIXTURE_H_
