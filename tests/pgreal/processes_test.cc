// The real-server experiment's child processes: a stop request during a
// command (initdb, say) ends the command but lets what it started in its
// group leave in order, as initdb's bootstrap postgres must to remove its
// shared memory.
#include "pgreal/internal/processes.h"

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include "base/interrupt.h"
#include "gtest/gtest.h"
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

}  // namespace
}  // namespace backendlab::pgreal::internal
