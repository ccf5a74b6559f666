// A backendlab run started in the background, for tests that signal it while
// it runs: its output goes to files in a directory, and, if the test leaves
// before it has exited (a failed assertion), it is killed with everything it
// started and reaped.
#ifndef BACKENDLAB_TESTS_TOOLS_SPAWNED_TOOL_H_
#define BACKENDLAB_TESTS_TOOLS_SPAWNED_TOOL_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/processes.h"
#include "tests/test_util/run_program.h"

namespace backendlab::test_util {

class SpawnedTool {
 public:
  // stdout and stderr go to dir/stdout and dir/stderr; own_group as
  // SpawnProgram says.
  SpawnedTool(std::vector<std::string> args, const std::string& dir, bool own_group = false)
      : pid_(SpawnProgram(std::move(args), dir, Stdout::kFile, own_group)) {}
  SpawnedTool(const SpawnedTool&) = delete;
  SpawnedTool& operator=(const SpawnedTool&) = delete;
  ~SpawnedTool() {
    if (pid_ > 0 && !Poll()) {
      KillTree();
      int status;
      waitpid(pid_, &status, 0);
    }
  }
  pid_t pid() const { return pid_; }

  // Its wait status once it has exited; nullopt while it runs.
  std::optional<int> Poll() {
    if (status_ || pid_ <= 0) return status_;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_;
  }

  // Whether, within `limit`, it has a handler for `signal` installed (the
  // SigCgt mask of /proc/PID/status): a signal sent before that would kill it
  // instead of asking it to stop, whatever the tool does right.
  bool WaitUntilCatching(int signal, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    const std::string path = "/proc/" + std::to_string(pid_) + "/status";
    do {
      const std::string status = ReadFile(path);
      const size_t at = status.find("SigCgt:");
      if (at != std::string::npos) {
        const uint64_t caught = std::stoull(status.substr(at + 7), nullptr, 16);
        if (caught & (uint64_t{1} << (signal - 1))) return true;
      }
      if (Poll()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }

  // Its wait status once it has exited, or nullopt after `limit`.
  std::optional<int> WaitFor(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!Poll() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }

 private:
  // The tool and its descendants (its postmaster, a stopped pool member, a
  // server), SIGKILLed: killing the tool alone left a postmaster waiting for
  // a member a test had stopped, for good. Each is stopped before its
  // children are listed, so that none forks one the list misses.
  void KillTree() {
    std::vector<pid_t> tree = {pid_};
    for (size_t i = 0; i < tree.size(); ++i) {
      kill(tree[i], SIGSTOP);
      for (pid_t child : backendlab::ChildrenOf(tree[i])) tree.push_back(child);
    }
    for (pid_t p : tree) kill(p, SIGKILL);
  }

  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TOOLS_SPAWNED_TOOL_H_
