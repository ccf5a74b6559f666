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
  // The member names itself after its fork: on a busy machine, later.
  std::vector<pid_t> member;
  test_util::WaitUntil([&] {
    member = test_util::ChildrenNamed(postmaster[0], "backend");
    return !member.empty();
  });
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

// ---- the pool's one limit ------------------------------------------------------

absl::StatusOr<lifecycle::CycleOptions> CycleFlags(const std::vector<std::string>& args) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, CycleFlagSpecs());
  if (!flags.ok()) return flags.status();
  return CycleOptionsFromFlags(*flags);
}

// The pool a run makes by default (hold + clients + 1) can be given too,
// and a pool too small for the held connections is refused with advice
// that the flag takes.
TEST(CyclePoolLimitTest, APoolTheDefaultWouldMakeCanBeGivenAndTheAdviceIsAccepted) {
  absl::StatusOr<lifecycle::CycleOptions> by_default = CycleFlags({"--mode=prefork", "--hold=2000"});
  if (!by_default.ok() && absl::StrContains(by_default.status().message(), "`hold`=2000: ")) {
    // The host's descriptors, processes or memory (CheckHostLimits) refuse
    // 2000 held backends before the pool is looked at.
    GTEST_SKIP() << "needs room for 2000 held backends: " << by_default.status().message();
  }
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  const int pool = lifecycle::PoolSize(*by_default);
  EXPECT_EQ(pool, 2002);
  absl::StatusOr<lifecycle::CycleOptions> given = CycleFlags({"--mode=prefork", "--hold=2000", absl::StrCat("--pool=", pool)});
  EXPECT_TRUE(given.ok()) << given.status();

  absl::StatusOr<lifecycle::CycleOptions> small = CycleFlags({"--mode=prefork", "--hold=2000", "--pool=1024"});
  ASSERT_FALSE(small.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(small.status())) << small.status();
  const std::string advice = InFlagWords(std::string(small.status().message()));
  const size_t at = advice.find("--pool=2001 or more");
  EXPECT_NE(at, std::string::npos) << advice;
  EXPECT_TRUE(CycleFlags({"--mode=prefork", "--hold=2000", "--pool=2001"}).ok()) << "the advice is accepted";

  absl::StatusOr<lifecycle::CycleOptions> beyond =
      CycleFlags({"--mode=prefork", absl::StrCat("--pool=", lifecycle::kMaxPool + 1)});
  EXPECT_TRUE(absl::IsInvalidArgument(beyond.status())) << beyond.status();
}

// ---- what the help and the failing line say ---------------------------------

// Each flag's help says where it applies as the run does: held connections,
// a killed backend, queries and a backend profile in every server mode,
// the default pool counting the held connections.
TEST_F(CycleCliTest, HelpSaysWhereEachFlagApplies) {
  const RunResult r = Run({"cycle", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto line_of = [&](const std::string& flag) {
    for (const std::string& line : Lines(r.out)) {
      if (line.rfind("  --" + flag + "=", 0) == 0) return line;
    }
    return std::string();
  };
  for (const char* flag : {"hold", "kill-backend", "queries", "backend-profile"}) {
    const std::string line = line_of(flag);
    EXPECT_NE(line.find("every server mode"), std::string::npos) << line;
    EXPECT_EQ(line.find("(fork mode)"), std::string::npos) << line;
  }
  EXPECT_NE(line_of("pool").find("--hold + --clients + 1"), std::string::npos) << line_of("pool");
}

// A crashed backend's run ends with a line that says which and how, where
// the report's incident lines (stdout) may have gone elsewhere.
TEST_F(CycleCliTest, TheFailingLineNamesTheCrashedBackend) {
  const RunResult r = Run(Cycle({"--kill-backend=5"}));
  EXPECT_EQ(r.exit_code, 1) << "stderr: " << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab cycle: backend ")) << r.err;
  EXPECT_NE(r.err.find("(connection 5) crashed: killed by signal 9"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("see above"), std::string::npos) << r.err;
  ExpectTmpdirEmpty();
}

// ---- reaping by pidfd ------------------------------------------------------------

// The postmaster reaping each backend by its pidfd serves every
// connection, held ones beside, reaps every backend and says how it reaps.
TEST_F(CycleCliTest, ReapingByPidfdReapsEveryBackend) {
  const std::string json = dir_ + "/pidfd.json";
  const RunResult r = Run(Cycle({"--reap=pidfd", "--hold=5", "--clients=2", "--json=" + json}));
  ASSERT_EQ(r.exit_code, 0) << "stderr: " << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("fork mode (reaped by pidfd)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backends: 10 exited, 0 crashed"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["header"]["config"].value("reap", ""), "pidfd") << j["header"].dump(2);
  for (const nlohmann::json& row : j.value("rows", nlohmann::json::array())) {
    if (row.value("phase", "") == "reap") {
      EXPECT_EQ(row.value("backends", -1), 10) << row.dump();
    }
  }
  ExpectNoProcessLeft();
  ExpectTmpdirEmpty();
}

TEST_F(CycleCliTest, ReapingByPidfdNeedsForkMode) {
  for (const char* mode : {"--mode=thread", "--mode=prefork", "--mode=inproc"}) {
    const RunResult r = Run(Cycle({mode, "--reap=pidfd"}));
    EXPECT_EQ(r.exit_code, 2) << mode << ": " << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab cycle: --reap=pidfd needs --mode=fork")) << r.err;
  }
  const RunResult r = Run({"compare", "--modes=thread", "--reap=pidfd", "--layouts=hash", "--shared-buffers=128MB",
                           "--connections=2", "--rounds=1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab compare: --reap=pidfd needs fork in --modes")) << r.err;
  ExpectTmpdirEmpty();
}

}  // namespace
}  // namespace backendlab::tools
