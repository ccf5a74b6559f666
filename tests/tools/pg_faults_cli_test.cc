// `backendlab pg` when it is stopped or killed where a user stops it — ^C
// during initdb, SIGKILL (the OOM killer, `timeout -s KILL`, a CI job's
// kill) — or when a process it runs is killed: nothing of a server is left,
// not its directory, not its shared memory.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "profiling/perf_record.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/skip.h"
#include "tests/test_util/wait.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/pg_cli_fixture.h"
#include "tests/tools/spawned_tool.h"

namespace backendlab::tools {
namespace {

std::string CommandName(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  in >> name;
  return name;
}

// Whether `ancestor` is among the first `depth` ancestors of `pid`.
bool DescendsFrom(pid_t pid, pid_t ancestor, int depth) {
  for (int i = 0; i < depth && pid > 1; ++i) {
    pid = ParentOf(pid);
    if (pid == ancestor) return true;
  }
  return false;
}

std::vector<pid_t> AllProcesses() { return ProcessesMentioning(""); }

class PgFaultsTest : public PgCliTest {
 protected:
  // The tool's initdb, once it runs (0 if none came first).
  pid_t WaitForInitdb(test_util::SpawnedTool& tool) {
    pid_t initdb = 0;
    test_util::WaitUntil(
        [&] {
          for (pid_t pid : ProcessesMentioning(tmpdir_)) {
            if (CommandName(pid) == "initdb" && ParentOf(pid) == tool.pid()) initdb = pid;
          }
          return initdb != 0 || tool.Poll().has_value();
        },
        test_util::kPatience, std::chrono::milliseconds(2));
    return initdb;
  }
  // The tool's SIGKILL leaves its directory to the watchdog, which removes
  // it once the server is gone: TMPDIR empty again, no process of it left.
  void ExpectEverythingGoesAfterAKill() {
    EXPECT_TRUE(test_util::WaitUntil([&] { return TmpdirIsEmpty(); }))
        << "left in TMPDIR " << test_util::kPatience.count() << " s after the kill";
    EXPECT_TRUE(test_util::WaitUntil([&] { return ProcessesMentioning(tmpdir_).empty(); }))
        << "a server process outlived the tool";
  }
};

// initdb's bootstrap postgres holds a System V segment it removes when it
// ends in order; a ^C that killed it left the segment until reboot.
TEST_F(PgFaultsTest, InterruptDuringInitdbLeavesNoSharedMemory) {
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "pg", "--shared-buffers=128MB", "--connections=20", "--rounds=1"},
                              dir_);
  const pid_t initdb = WaitForInitdb(tool);
  ASSERT_NE(initdb, 0) << "no initdb ran: " << test_util::ReadFile(dir_ + "/stderr");
  // Its postgres (--boot, then --single), through the shell popen() runs, once
  // it has made its segment.
  pid_t bootstrap = 0;
  ASSERT_TRUE(test_util::WaitUntil(
      [&] {
        for (pid_t pid : AllProcesses()) {
          if (CommandName(pid) == "postgres" && DescendsFrom(pid, initdb, 2) && !SegmentsCreatedBy(pid).empty()) {
            bootstrap = pid;
          }
        }
        return bootstrap != 0 || tool.Poll().has_value();
      },
      test_util::kPatience, std::chrono::milliseconds(1)) &&
              bootstrap != 0)
      << "initdb's postgres never held a segment: " << test_util::ReadFile(dir_ + "/stderr");
  ASSERT_TRUE(tool.WaitUntilCatching(SIGINT, test_util::kPatience));
  ASSERT_EQ(kill(tool.pid(), SIGINT), 0);
  const std::optional<int> code = tool.WaitFor(test_util::kPatience);
  ASSERT_TRUE(code.has_value());
  EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 130) << *code << ": " << test_util::ReadFile(dir_ + "/stderr");
  EXPECT_TRUE(test_util::WaitUntil([&] { return SegmentsCreatedBy(bootstrap).empty(); }))
      << "initdb's postgres left its System V segment";
  ExpectNoServerLeft();
}

TEST_F(PgFaultsTest, AKilledToolLeavesNoDirectoryMidRun) {
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "pg", "--duration=60s", "--rounds=1", "--shared-buffers=128MB"},
                              dir_);
  const pid_t postmaster = WaitForProcessNamed("postgres", tool);
  ASSERT_NE(postmaster, 0) << "no server started: " << test_util::ReadFile(dir_ + "/stderr");
  ASSERT_TRUE(WaitForABackend(postmaster, tool)) << "the loop never started: " << test_util::ReadFile(dir_ + "/stderr");
  ASSERT_FALSE(TmpdirIsEmpty());
  ASSERT_EQ(kill(tool.pid(), SIGKILL), 0);
  ASSERT_TRUE(tool.WaitFor(test_util::kPatience).has_value());
  ExpectEverythingGoesAfterAKill();
  EXPECT_TRUE(test_util::WaitUntil([&] { return SegmentsCreatedBy(postmaster).empty(); }))
      << "the server's System V segment was left";
}

TEST_F(PgFaultsTest, AKilledToolLeavesNoDirectoryDuringInitdb) {
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "pg", "--shared-buffers=128MB", "--connections=20", "--rounds=1"},
                              dir_);
  ASSERT_NE(WaitForInitdb(tool), 0) << "no initdb ran: " << test_util::ReadFile(dir_ + "/stderr");
  ASSERT_EQ(kill(tool.pid(), SIGKILL), 0);
  ASSERT_TRUE(tool.WaitFor(test_util::kPatience).has_value());
  ExpectEverythingGoesAfterAKill();
}

// perf killed while it records: the run fails naming the signal (perf had
// no time to print a message of its own), and nothing is left.
TEST_F(PgFaultsTest, AKilledPerfIsNamedAsKilled) {
  if (absl::Status s = profiling::SystemWideRecordingAvailable(); !s.ok()) BACKENDLAB_SKIP(test_util::PerfRecordNeed(s)) << s.message();
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "pg", "--profile", "--duration=3s", "--rounds=1", "--warmup=0",
                               "--shared-buffers=128MB", "--out=" + dir_ + "/profile"},
                              dir_);
  const pid_t perf = WaitForProcessNamed("perf", tool);
  ASSERT_NE(perf, 0) << "perf record never started: " << test_util::ReadFile(dir_ + "/stderr");
  ASSERT_EQ(kill(perf, SIGKILL), 0);
  const std::optional<int> code = tool.WaitFor(test_util::kPatience);
  ASSERT_TRUE(code.has_value());
  EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 1) << *code;
  const std::string err = test_util::ReadFile(dir_ + "/stderr");
  EXPECT_NE(err.find("killed by signal 9"), std::string::npos) << err;
  EXPECT_EQ(err.find("its message is above"), std::string::npos) << err;
  ExpectNoServerLeft();
}

// A "pgbouncer" that exits at once, having logged nothing: the run fails
// saying the log is empty, not with a dangling "its log ends:".
TEST_F(PgFaultsTest, APoolerThatEndsAtOnceSaysItsLogIsEmpty) {
  const test_util::RunResult r = Run(Small({"pg", "--via=pgbouncer", "--pgbouncer=/bin/true"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("pgbouncer did not start (exit status 0)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the log is empty"), std::string::npos) << r.err;
  ExpectNoServerLeft();
}

}  // namespace
}  // namespace backendlab::tools
