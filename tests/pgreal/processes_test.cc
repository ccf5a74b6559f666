// The real-server experiment's child processes: a stop request during a
// command (initdb, say) ends the command but lets what it started in its
// group leave in order, as initdb's bootstrap postgres must to remove its
// shared memory.
#include "pgreal/internal/processes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include "base/interrupt.h"
#include "gtest/gtest.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"
#include "tests/test_util/wait.h"

namespace backendlab::pgreal::internal {
namespace {

class RunToEndTest : public test_util::TempDirTest {
 protected:
  void TearDown() override {
    ResetStopRequestForTesting();
    TempDirTest::TearDown();
  }
};

// The command is a shell whose background child, in its group, waits for the
// shell to be gone and then writes a file: it ends on its own only if it is
// left alive when the shell is killed.
TEST_F(RunToEndTest, AStopEndsTheCommandAndWaitsForTheRestOfItsGroupToLeaveInOrder) {
  const std::string started = dir_ + "/started", left = dir_ + "/left";
  const std::string script = "shell=$$; (touch '" + started + "'; while kill -0 $shell 2>/dev/null; do sleep 0.01; done; "
                             "touch '" + left + "') & wait";
  std::thread stopper([&] {
    test_util::WaitUntil([&] { return std::filesystem::exists(started); });
    RequestStop(SIGINT);
  });
  const absl::Status s = RunToEnd({"/bin/sh", "-c", script}, SpawnOptions{});
  stopper.join();
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_TRUE(std::filesystem::exists(left)) << "the command's group was killed instead of left to end";
}

TEST_F(RunToEndTest, ACommandThatFailsNamesItsExitStatus) {
  const absl::Status s = RunToEnd({"/bin/sh", "-c", "exit 3"}, SpawnOptions{});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exit status 3"), std::string::npos) << s;
  EXPECT_TRUE(RunToEnd({"/bin/true"}, SpawnOptions{}).ok());
}

// A command run as another user (the server's, when the tool is root)
// starts in "/", not in the caller's working directory, which that user may
// not enter: `postgres -C` run from a 0700 directory of root's failed with
// "could not change directory".
TEST_F(RunToEndTest, ACommandRunAsAnotherUserStartsWhereThatUserMayGo) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a command is run as another user only by root";
  absl::StatusOr<User> user = LookUpUser("postgres");
  if (!user.ok()) GTEST_SKIP() << "needs the postgres user (Debian's postgresql package): " << user.status();
  const std::string closed = dir_ + "/closed", theirs = dir_ + "/theirs";
  ASSERT_EQ(chmod(dir_.c_str(), 0711), 0);
  ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
  ASSERT_EQ(mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(chown(theirs.c_str(), user->uid, user->gid), 0);
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(closed);
  SpawnOptions options;
  options.user = *user;
  options.log_path = theirs + "/out";
  const absl::Status s = RunToEnd({"/bin/sh", "-c", "ls . >/dev/null && pwd -P"}, options);
  std::filesystem::current_path(before);
  ASSERT_TRUE(s.ok()) << s << ": " << test_util::ReadFile(options.log_path);
  EXPECT_EQ(test_util::ReadFile(options.log_path), "/\n");
}

}  // namespace
}  // namespace backendlab::pgreal::internal
