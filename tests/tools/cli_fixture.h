// The one fixture of every test that runs the real backendlab binary.
#ifndef BACKENDLAB_TESTS_TOOLS_CLI_FIXTURE_H_
#define BACKENDLAB_TESTS_TOOLS_CLI_FIXTURE_H_

#include <sys/prctl.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"
#include "tests/tools/spawned_tool.h"

namespace backendlab::tools {

// Each test gets a private directory dir_ for the child's output and its
// files, and in it a private TMPDIR (tmpdir_) for whatever the tool creates
// there (a socket directory, a sample file), which must be empty again after
// every run: passed, failed or interrupted.
class CliTest : public test_util::PrivateTmpdirTest {
 protected:
  // Runs `backendlab args...` in dir_ and waits for it.
  test_util::RunResult Run(const std::vector<std::string>& args, test_util::Stdout out = test_util::Stdout::kFile) {
    std::vector<std::string> argv = {BACKENDLAB_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_util::RunProgram(std::move(argv), dir_, out);
  }

  void ExpectTmpdirEmpty() { EXPECT_TRUE(TmpdirIsEmpty()) << "the tool left files in its TMPDIR " << tmpdir_; }

  // Starts `backendlab <command> args...` (work of hours), sends SIGINT once
  // it is into the measurements, and checks a clean stop: exit 130, one line
  // on stderr naming the command and "interrupted", no table, no process of
  // the tool left, the TMPDIR empty.
  void ExpectSigintStopsALongRun(const std::string& command, const std::vector<std::string>& args) {
    // Orphans of the tool are reparented to this process, so they show up below.
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    std::vector<std::string> argv = {BACKENDLAB_CLI_PATH, command};
    argv.insert(argv.end(), args.begin(), args.end());
    test_util::SpawnedTool tool(argv, dir_);
    ASSERT_GT(tool.pid(), 0);
    ASSERT_TRUE(tool.WaitUntilCatching(SIGINT, std::chrono::seconds(20)))
        << "no SIGINT handler: " << test_util::ReadFile(dir_ + "/stderr");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // into the measurements
    ASSERT_FALSE(tool.Poll()) << "the tool exited early: " << test_util::ReadFile(dir_ + "/stderr");

    ASSERT_EQ(kill(tool.pid(), SIGINT), 0);
    const std::optional<int> status = tool.WaitFor(std::chrono::seconds(20));
    ASSERT_TRUE(status) << "still running 20 s after SIGINT";
    ASSERT_TRUE(WIFEXITED(*status)) << "killed by the signal instead of stopping cleanly: status " << *status;
    EXPECT_EQ(WEXITSTATUS(*status), 130);
    EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty()) << "a process of the tool outlived it";
    const std::string err = test_util::ReadFile(dir_ + "/stderr");
    EXPECT_TRUE(test_util::IsOneLineStartingWith(err, "backendlab " + command + ": ")) << err;
    EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
    EXPECT_EQ(test_util::ReadFile(dir_ + "/stdout"), "") << "a stopped run prints no table";
    ExpectTmpdirEmpty();
  }

  // The tool created nothing: dir_ holds only what Run() puts there (the
  // child's stdout and stderr, and the TMPDIR), and the TMPDIR is empty.
  void ExpectNothingCreated() {
    for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      EXPECT_TRUE(name == "stdout" || name == "stderr" || e.path() == tmpdir_) << "the tool created " << e.path();
    }
    ExpectTmpdirEmpty();
  }
};

// `args` with each of `defaults` (a "--name=value") added unless a flag of the
// same name is given: small settings so that a bad input wrongly accepted
// fails quickly instead of running a full default.
inline std::vector<std::string> WithDefaults(std::vector<std::string> args, const std::vector<std::string>& defaults) {
  for (const std::string& flag : defaults) {
    const std::string name = flag.substr(0, flag.find('=') + 1);
    const bool given = std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.rfind(name, 0) == 0; });
    if (!given) args.push_back(flag);
  }
  return args;
}

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TESTS_TOOLS_CLI_FIXTURE_H_
