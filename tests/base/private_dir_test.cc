// Private directories: TMPDIR made absolute, and the watchdog that removes a
// directory after its owner is killed — not before the process named with
// it has ended, and whatever the owner's forked children do meanwhile.
#include "base/private_dir.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/interleaved.h"
#include "gtest/gtest.h"
#include "tests/test_util/temp_dir.h"
#include "tests/test_util/wait.h"

namespace backendlab {
namespace {

using test_util::ScopedEnv;

bool Gone(pid_t pid) {
  // Reaped by this test (its child), or not a process at all.
  int status;
  return waitpid(pid, &status, WNOHANG) == pid || (kill(pid, 0) != 0 && errno == ESRCH);
}

class PrivateDirTest : public test_util::TempDirTest {};

TEST_F(PrivateDirTest, TempRootIsTmpdirMadeAbsolute) {
  {
    const ScopedEnv unset("TMPDIR", "");
    EXPECT_EQ(TempRoot(), "/tmp");
  }
  {
    const ScopedEnv absolute("TMPDIR", dir_ + "//");
    EXPECT_EQ(TempRoot(), dir_);
  }
  {
    const ScopedEnv relative("TMPDIR", "some/where");
    EXPECT_EQ(TempRoot(), std::filesystem::current_path().string() + "/some/where");
  }
}

TEST_F(PrivateDirTest, ADirectoryIsPrivateAndGoesWithItsOwnerAndSoDoesTheWatchdog) {
  const ScopedEnv tmpdir("TMPDIR", dir_);
  std::string path;
  {
    absl::StatusOr<PrivateDir> made = PrivateDir::Make("backendlab-test");
    ASSERT_TRUE(made.ok()) << made.status();
    path = made->path();
    EXPECT_EQ(path.rfind(dir_ + "/backendlab-test.", 0), 0u) << path;
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_GT(WatchdogPidForTesting(), 0) << "watched while it exists";
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(WatchdogPidForTesting(), 0) << "no watchdog runs while nothing is watched";
}

// A hold keeps one watchdog for every directory made and removed under it,
// and ends it when it goes; so do interleaved rounds (base/interleaved.h).
TEST_F(PrivateDirTest, AHoldKeepsOneWatchdogAcrossDirectoriesAndEndsItWhenItGoes) {
  const ScopedEnv tmpdir("TMPDIR", dir_);
  {
    const WatchdogHold hold;
    const pid_t watchdog = WatchdogPidForTesting();
    ASSERT_GT(watchdog, 0) << "started by the hold, before any directory";
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<PrivateDir> made = PrivateDir::Make("backendlab-test");
      ASSERT_TRUE(made.ok()) << made.status();
      EXPECT_EQ(WatchdogPidForTesting(), watchdog);
    }
    EXPECT_EQ(WatchdogPidForTesting(), watchdog) << "nothing registered, but held";
  }
  EXPECT_EQ(WatchdogPidForTesting(), 0) << "ended with the hold";
  std::vector<pid_t> seen;
  ASSERT_TRUE(RunInterleaved("test", RoundPlan(3), 2, [&](size_t, int64_t) {
                absl::StatusOr<PrivateDir> made = PrivateDir::Make("backendlab-test");
                seen.push_back(WatchdogPidForTesting());
                return made.status();
              }).ok());
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_GT(seen[0], 0);
  for (pid_t pid : seen) EXPECT_EQ(pid, seen[0]) << "one watchdog for every round";
  EXPECT_EQ(WatchdogPidForTesting(), 0);
}

TEST_F(PrivateDirTest, PathsTheWatchdogCannotCarryAreRefused) {
  for (const std::string bad : {"relative", "/with\nnewline", "/with'quote", ""}) {
    EXPECT_TRUE(absl::IsInvalidArgument(WatchDirectory(bad))) << bad;
  }
  EXPECT_EQ(WatchdogPidForTesting(), 0);
}

// The owner, a child of the test, registers a directory (to wait for
// `waited`, a sleeping process), forks a grandchild that lives on, and is
// killed. The directory stays while `waited` lives and goes once it has.
TEST_F(PrivateDirTest, AKilledOwnersDirectoryGoesOnceTheProcessItWaitsForHasEnded) {
  const std::string path = dir_ + "/watched";
  ASSERT_TRUE(std::filesystem::create_directory(path));
  ASSERT_TRUE(std::filesystem::create_directory(path + "/inside"));
  const pid_t waited = fork();
  ASSERT_GE(waited, 0);
  if (waited == 0) {
    pause();
    _exit(0);
  }
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    close(ready[0]);
    if (!WatchDirectory(path, waited).ok()) _exit(1);
    // A child of the owner holds no copy of the watchdog's socket: it must
    // not keep the watchdog from seeing the owner go.
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    const pid_t pids[2] = {WatchdogPidForTesting(), grandchild};
    (void)!write(ready[1], pids, sizeof pids);
    pause();
    _exit(0);
  }
  close(ready[1]);
  pid_t pids[2] = {0, 0};
  ASSERT_EQ(read(ready[0], pids, sizeof pids), static_cast<ssize_t>(sizeof pids));
  close(ready[0]);
  const pid_t watchdog = pids[0], grandchild = pids[1];
  ASSERT_GT(watchdog, 0);
  ASSERT_GT(grandchild, 0);
  ASSERT_EQ(kill(owner, SIGKILL), 0);
  ASSERT_TRUE(test_util::WaitUntil([&] { return Gone(owner); }));
  // The watchdog now waits for `waited`; the directory is still there.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(std::filesystem::exists(path)) << "removed before the process it waits for ended";
  EXPECT_FALSE(Gone(watchdog)) << "the watchdog ended without waiting";
  ASSERT_EQ(kill(waited, SIGKILL), 0);
  ASSERT_TRUE(test_util::WaitUntil([&] { return Gone(waited); }));
  EXPECT_TRUE(test_util::WaitUntil([&] { return !std::filesystem::exists(path); }))
      << "the owner was killed and the waited-for process ended, and the directory stayed";
  EXPECT_TRUE(test_util::WaitUntil([&] { return Gone(watchdog); })) << "the watchdog outlived its work";
  EXPECT_FALSE(Gone(grandchild)) << "the owner's child lived on throughout";
  kill(grandchild, SIGKILL);
}

}  // namespace
}  // namespace backendlab
