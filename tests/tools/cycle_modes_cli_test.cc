// The real `backendlab cycle` in its thread and prefork modes, and the
// postmaster's choices around them: queries in a thread, a pool's build
// stopped or orphaned, a pool member stopped, the pool's one limit, the
// reaping by pidfd, and what the help and the failing line say.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lifecycle/cycle.h"
#include "nlohmann/json.hpp"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/wait.h"
#include "tests/tools/cycle_cli_fixture.h"
#include "tests/tools/spawned_tool.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/flags.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::Lines;
using test_util::ReadFile;
using test_util::RunResult;
using test_util::SpawnedTool;

// ---- queries in a backend thread ----------------------------------------------

// The probe's `cycle --mode=thread --queries=3`: every backend thread
// answers its queries, through every wait strategy, and none is reported
// crashed or failed.
TEST_F(CycleCliTest, BackendThreadsAnswerQueriesThroughEveryWaitStrategy) {
  for (const char* wait : {"per-call", "long-lived", "cached", "poll"}) {
    SCOPED_TRACE(wait);
    const RunResult r = Run(Cycle({"--mode=thread", "--queries=3", std::string("--wait=") + wait, "--clients=2"}));
    EXPECT_EQ(r.exit_code, 0) << "stderr: " << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("(10 measured, 0 failed)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("backends: 10 exited, 0 crashed"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("query round trip us:"), std::string::npos) << r.out;
  }
  ExpectTmpdirEmpty();
}

// ---- the pool's build, stopped or orphaned ------------------------------------

constexpr int kBigPool = 600;

std::vector<std::string> BigPoolCycle() {
  return {BACKENDLAB_CLI_PATH,       "cycle",       "--mode=prefork", absl::StrCat("--pool=", kBigPool),
          "--shared-buffers=128MB", "--work-lookups=10", "--connections=20"};
}

// The tool's postmaster once it has forked `members` of its pool; 0 (with
// a failure) if the tool ended or it never got there.
pid_t WaitForPoolMembers(SpawnedTool& tool, size_t members, const std::string& dir) {
  pid_t postmaster = 0;
  test_util::WaitUntil([&] {
    if (tool.Poll()) return true;
    const std::vector<pid_t> named = test_util::ChildrenNamed(tool.pid(), "postmaster");
    if (named.size() == 1 && test_util::ChildrenOf(named[0]).size() >= members) postmaster = named[0];
    return postmaster != 0;
  });
  EXPECT_NE(postmaster, 0) << "no pool being built: " << ReadFile(dir + "/stderr");
  return postmaster;
}

// Polls `postmaster`'s children until `done`; the most it had at once.
template <typename Done>
size_t MostChildrenUntil(pid_t postmaster, Done done) {
  size_t most = 0;
  EXPECT_TRUE(test_util::WaitUntil(
      [&] {
        most = std::max(most, test_util::ChildrenOf(postmaster).size());
        return done();
      },
      test_util::kPatience, std::chrono::milliseconds(5)));
  return most;
}

// A stop asked of the tool alone (`kill -INT`) while its pool is being
// built: the build ends at the next member, as a fork-mode run ends at the
// next connection. Exit 130, most of the pool never forked, nothing left.
TEST_F(CycleCliTest, APoolBuildStopsWhenTheToolIsAskedToStop) {
  SpawnedTool tool(BigPoolCycle(), dir_);
  ASSERT_GT(tool.pid(), 0);
  const pid_t postmaster = WaitForPoolMembers(tool, 8, dir_);
  ASSERT_NE(postmaster, 0);
  ASSERT_TRUE(tool.WaitUntilCatching(SIGINT, test_util::kPatience));
  ASSERT_EQ(kill(tool.pid(), SIGINT), 0);
  const size_t most = MostChildrenUntil(postmaster, [&] { return tool.Poll().has_value(); });
  EXPECT_LT(most, static_cast<size_t>(kBigPool / 2)) << "the pool went on being built after the stop";
  ASSERT_TRUE(tool.Poll());
  EXPECT_TRUE(WIFEXITED(*tool.Poll()) && WEXITSTATUS(*tool.Poll()) == 130) << "status " << *tool.Poll();
  ExpectNoProcessLeft();
  ExpectTmpdirEmpty();
}

// The tool SIGKILLed while its pool is being built: the orphaned
// postmaster sees the control pipe's end between forks, forks no more,
// ends its members and goes; its directory goes with the watchdog.
TEST_F(CycleCliTest, AnOrphanedPostmasterStopsBuildingItsPoolAndGoes) {
  SpawnedTool tool(BigPoolCycle(), dir_);
  ASSERT_GT(tool.pid(), 0);
  const pid_t postmaster = WaitForPoolMembers(tool, 8, dir_);
  ASSERT_NE(postmaster, 0);
  ASSERT_EQ(kill(tool.pid(), SIGKILL), 0);
  ASSERT_TRUE(tool.WaitFor(test_util::kPatience));
  // The postmaster, its members and the watchdog are this process's
  // children now (a subreaper): each is reaped here as it ends.
  const size_t most = MostChildrenUntil(postmaster, [&] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return test_util::ChildrenOf(getpid()).empty() && TmpdirIsEmpty();
  });
  EXPECT_LT(most, static_cast<size_t>(kBigPool / 2)) << "the orphaned postmaster went on building its pool";
  ExpectNoProcessLeft();
  ExpectTmpdirEmpty();
}

// ---- a pool member stopped -------------------------------------------------------

// A pre-forked backend stopped (SIGSTOP) keeps its connection's client
// waiting: it is killed once it has stayed stopped for the postmaster's
// bound, and the run fails with one line naming it, long before its 60 s.
TEST_F(CycleCliTest, AStoppedPoolMemberEndsTheRunNamingIt) {
  std::vector<std::string> args = LongCycle();
  args.insert(args.end(), {"--mode=prefork", "--pool=1"});
  SpawnedTool tool(args, dir_);
  ASSERT_GT(tool.pid(), 0);
  ASSERT_TRUE(WaitUntilRunning(tool, tmpdir_, dir_));
  const std::vector<pid_t> postmaster = test_util::ChildrenNamed(tool.pid(), "postmaster");
  ASSERT_EQ(postmaster.size(), 1u);
  const std::vector<pid_t> member = test_util::ChildrenNamed(postmaster[0], "backend");
  ASSERT_EQ(member.size(), 1u) << "a pool of one";
  ASSERT_EQ(kill(member[0], SIGSTOP), 0);

  const std::optional<int> status = tool.WaitFor(std::chrono::seconds(50));
  ASSERT_TRUE(status) << "the run still waits 50 s after its pool member was stopped";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << "status " << *status;
  const std::string err = ReadFile(dir_ + "/stderr");
  EXPECT_TRUE(IsOneLineStartingWith(
      err, absl::StrCat("backendlab cycle: postmaster: pre-forked backend ", member[0], " (pool member 0) stayed stopped")))
      << err;
  ExpectNoProcessLeft();
  ExpectTmpdirEmpty();
}

// ---- what the pool's figures leave out ------------------------------------------

// The server's figures of a pool are its steady state: the pool's build and
// end are reported apart, as CPU, and only for a pool.
TEST_F(CycleCliTest, APoolsBuildAndEndAreReportedApart) {
  for (const char* mode : {"--mode=prefork", "--mode=fork"}) {
    SCOPED_TRACE(mode);
    const std::string json = dir_ + "/outside.json";
    const RunResult r = Run(Cycle({mode, "--json=" + json}));
    ASSERT_EQ(r.exit_code, 0) << "stderr: " << r.err;
    const nlohmann::json j = nlohmann::json::parse(ReadFile(json), nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded());
    const nlohmann::json& outside = j["header"]["summary"]["pool_outside_cpu_us"];
    if (std::string(mode) == "--mode=prefork") {
      ASSERT_TRUE(outside.is_number()) << j["header"]["summary"].dump(2);
      EXPECT_GT(outside.get<double>(), 0) << "two members forked, built, ended and reaped";
      EXPECT_NE(r.out.find("its build and end, left out of the server's figures: "), std::string::npos) << r.out;
    } else {
      EXPECT_TRUE(outside.is_null()) << outside.dump();
    }
  }
  ExpectTmpdirEmpty();
}

}  // namespace
}  // namespace backendlab::tools
