// The real `backendlab profile`: outputs a user can open, usage errors, a
// missing perf, and nothing left behind, even when it is killed mid-perf.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "profiling/folded_stacks.h"
#include "profiling/perf_record.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/tools/cli_fixture.h"
#include "tests/test_util/skip.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::ReadFile;
using test_util::RunResult;

// A small array/always run: enough exit-check samples in about a second.
// Outputs go to dir_/out.
class ProfileCliTest : public CliTest {
 protected:
  // The CLI's perf, postmaster and backends, should they outlive it, are
  // reparented to this test process (a subreaper), where the tests see them.
  static void SetUpTestSuite() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

  std::vector<std::string> ProfileArgs(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"profile"};
    args.insert(args.end(), extra.begin(), extra.end());
    return WithDefaults(args, {"--layout=array", "--exit-check=always", "--shared-buffers=1GB", "--connections=30",
                               "--warmup=2", "--work-lookups=10", "--clock=wall", "--frequency=5000",
                               "--out=" + dir_ + "/out"});
  }
  RunResult Profile(const std::vector<std::string>& extra) { return Run(ProfileArgs(extra)); }

  void ExpectNothingLeft() {
    ExpectTmpdirEmpty();
    EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty());
  }
};

// Whether perf is installed and lets this machine record: "" if so, else why not.
std::string PerfUnusable(const std::string& dir) {
  if (access("/usr/bin/perf", X_OK) != 0) return "perf is not installed here (Debian: apt-get install linux-perf)";
  const RunResult probe = test_util::RunProgram(
      {"/usr/bin/perf", "record", "-q", "-e", "cpu-clock", "-o", dir + "/probe.data", "--", "/bin/true"}, dir);
  std::filesystem::remove(dir + "/probe.data");
  return probe.exit_code == 0 ? "" : "perf record is refused here: " + probe.err;
}

TEST_F(ProfileCliTest, WritesFoldedStacksFlameGraphsAndASummary) {
  const RunResult r = Profile({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string out = dir_ + "/out";
  for (const char* file : {"all.folded", "all.svg", "phases.folded", "phases.svg", "phase-exit_check.folded",
                           "phase-exit_check.svg", "summary.txt"}) {
    EXPECT_TRUE(std::filesystem::exists(out + "/" + file)) << file;
  }
  // Every folded file parses back; the per-phase files add up to phases.
  absl::StatusOr<profiling::FoldedStacks> phases = profiling::FoldedStacks::Parse(ReadFile(out + "/phases.folded"));
  ASSERT_TRUE(phases.ok()) << phases.status();
  int64_t per_phase = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    const std::string name = entry.path().filename();
    if (!name.starts_with("phase-") || !name.ends_with(".folded")) continue;
    absl::StatusOr<profiling::FoldedStacks> one = profiling::FoldedStacks::Parse(ReadFile(entry.path()));
    ASSERT_TRUE(one.ok()) << name << ": " << one.status();
    per_phase += one->total_samples();
  }
  EXPECT_EQ(per_phase, phases->total_samples());
  // The exit check's samples are under its phase frame, and its code is there.
  const profiling::FoldedStacks exit_check = phases->Under("backend").Under("[exit_check]");
  EXPECT_GT(exit_check.total_samples(), 0) << phases->ToText();
  EXPECT_NE(ReadFile(out + "/phase-exit_check.folded").find("RunExitCheck"), std::string::npos);

  const std::string svg = ReadFile(out + "/phases.svg");
  EXPECT_TRUE(svg.starts_with("<?xml") || svg.starts_with("<svg")) << svg.substr(0, 100);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("[exit_check]"), std::string::npos);

  EXPECT_EQ(ReadFile(out + "/summary.txt"), r.out) << "summary.txt holds what was printed";
  EXPECT_NE(r.out.find("top 15 functions of the backends"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit_check"), std::string::npos);
  EXPECT_NE(r.out.find("wall ms (ctr)"), std::string::npos) << "with --clock=wall, samples are set beside wall time";
  ExpectNothingLeft();
}

TEST_F(ProfileCliTest, BadFlagsAreUsageErrors) {
  for (const char* bad : {"--frequency=0", "--frequency=100001", "--clock=tsc", "--unwinder=dwarf",
                                 "--perf=maybe", "--top=0", "--out=", "--layout=tree"}) {
    const RunResult r = Profile({std::string(bad)});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab profile: ")) << bad;
    EXPECT_EQ(r.err.find("given twice"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << bad;
  }
  // perf's cpu-clock beside a wall-clock profile would be two clocks compared.
  const RunResult r = Profile({"--perf", "--clock=wall"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab profile: --perf records CPU time")) << r.err;
  ExpectNothingCreated();  // no --out, not even an empty one
  ExpectNothingLeft();
}

// An --out that cannot be created, or an unwritable --json, fails before
// the workload runs (a million connections, refused at once), and nothing is
// created: not --out, not an empty summary.txt in it.
TEST_F(ProfileCliTest, UnwritableOutputFailsBeforeTheRun) {
  const std::string out = dir_ + "/no/such/dir";
  const RunResult r = Profile({"--connections=1000000", "--out=" + out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab profile: --out=")) << r.err;
  EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "nothing measured";
  ExpectNothingCreated();
  ExpectNothingLeft();
}

TEST_F(ProfileCliTest, UnwritableJsonPathFailsBeforeTheRun) {
  const std::string path = dir_ + "/no-such-dir/x.json";
  const RunResult r = Profile({"--connections=1000000", "--json=" + path});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab profile: --json=")) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "nothing measured";
  ExpectNothingCreated();  // nor the default --out
  ExpectNothingLeft();
}

// backendlab's main() starts with DieWithParentIfAsked (no constructor runs
// it before main): as perf's workload whose perf is already gone, it ends at
// once, as if terminated, before it runs anything.
TEST_F(ProfileCliTest, WorkloadWhosePerfIsGoneEndsAtOnce) {
  test_util::ScopedEnv env(profiling::kDieWithParentEnv, "1");  // not its parent
  const RunResult r = Run({"cycle", "--connections=1000000"});
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_EQ(r.out, "");
  ExpectNothingLeft();
}

TEST_F(ProfileCliTest, MissingPerfSaysHowToGetItAndKeepsTheBuiltInProfile) {
  test_util::ScopedEnv no_perf("PATH", dir_ + "/empty-path");
  const RunResult r = Profile({"--perf", "--clock=cpu"});  // alone: on
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab profile: --perf: perf is not installed")) << r.err;
  EXPECT_NE(r.err.find("apt-get install linux-perf"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/out/phases.svg")) << "the built-in profile is written all the same";
  ExpectNothingLeft();
}

// perf itself, where it is installed and allowed: its stacks are folded the
// same way, side by side with the sampler's.
TEST_F(ProfileCliTest, PerfRunsTheSameWorkloadSideBySide) {
  if (const std::string why = PerfUnusable(dir_); !why.empty()) BACKENDLAB_SKIP(test_util::kNeedsPerf) << why;
  const RunResult r = Profile({"--perf", "--clock=cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<profiling::FoldedStacks> perf = profiling::FoldedStacks::Parse(ReadFile(dir_ + "/out/perf.folded"));
  ASSERT_TRUE(perf.ok()) << perf.status();
  EXPECT_GT(perf->Under("backend").total_samples(), 0) << "backends are named `backend` for perf";
  EXPECT_NE(r.out.find("agreement: "), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/perf.data.old"));
  ExpectNothingLeft();
}

using Member = test_util::ProcessStat;

// The processes of a run, found by its process group.
std::vector<Member> GroupMembers(pid_t group) {
  std::vector<Member> members;
  for (const Member& m : test_util::AllProcesses()) {
    if (m.pgrp == group) members.push_back(m);
  }
  return members;
}

// Whether perf's workload is up: perf, its child (backendlab cycle) and that
// child's postmaster.
bool PerfWorkloadRunning(const std::vector<Member>& members) {
  auto child_of = [&](pid_t parent, const std::string& comm) {
    for (const Member& m : members) {
      if (m.ppid == parent && m.comm == comm) return m.pid;
    }
    return pid_t{0};
  };
  for (const Member& perf : members) {
    if (perf.comm != "perf") continue;
    const pid_t workload = child_of(perf.pid, "backendlab");
    if (workload != 0 && child_of(workload, "postmaster") != 0) return true;
  }
  return false;
}

std::string Describe(const std::vector<Member>& members) {
  std::string text;
  for (const Member& m : members) text += " " + m.comm + "[" + std::to_string(m.pid) + "]";
  return text;
}

struct Kill {
  const char* id;  // the test's name
  const char* name;
  int signal;
  bool group;  // to the tool's process group (a terminal, timeout), or the tool alone
};

void PrintTo(const Kill& k, std::ostream* out) { *out << k.name; }

class ProfileKillTest : public ProfileCliTest, public ::testing::WithParamInterface<Kill> {};

// Defect 6: `profile --perf` killed while perf runs used to leave perf, the
// workload, its postmaster and backends running until the workload's
// --duration ended. Whatever kills it now, nothing of the run outlives it
// by more than a short grace, and TMPDIR is empty.
TEST_P(ProfileKillTest, DuringPerfLeavesNothingBehind) {
  if (const std::string why = PerfUnusable(dir_); !why.empty()) BACKENDLAB_SKIP(test_util::kNeedsPerf) << why;
  const Kill kill_how = GetParam();
  // The workload runs 12 s under perf; the grace is shorter, so that an
  // orphan left to finish on its own is found.
  constexpr auto kGrace = std::chrono::seconds(8);
  std::vector<std::string> args = {BACKENDLAB_CLI_PATH};
  for (const std::string& a : ProfileArgs({"--perf", "--clock=cpu", "--duration=12s", "--shared-buffers=128MB"})) {
    if (!a.starts_with("--connections=")) args.push_back(a);
  }
  const pid_t tool = test_util::SpawnProgram(args, dir_, test_util::Stdout::kFile, /*own_group=*/true);
  ASSERT_GT(tool, 0);

  bool running = false;
  for (auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       !running && std::chrono::steady_clock::now() < give_up;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    running = PerfWorkloadRunning(GroupMembers(tool));
    if (waitpid(tool, nullptr, WNOHANG) == tool) break;
  }
  ASSERT_TRUE(running) << "perf's workload never ran: " << ReadFile(dir_ + "/stderr");
  ASSERT_EQ(kill_how.group ? kill(-tool, kill_how.signal) : kill(tool, kill_how.signal), 0);

  // Reap the tool, and whatever of its run was orphaned to this subreaper.
  int status = -1;
  std::vector<Member> left;
  for (auto give_up = std::chrono::steady_clock::now() + kGrace; std::chrono::steady_clock::now() < give_up;) {
    int s = 0;
    for (pid_t reaped; (reaped = waitpid(-1, &s, WNOHANG)) > 0;) {
      if (reaped == tool) status = s;
    }
    left = GroupMembers(tool);
    if (status != -1 && left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(left.empty()) << kill_how.name << ": still running" << Describe(left);
  for (const Member& m : left) kill(m.pid, SIGKILL);  // for the next test
  for (int s = 0; waitpid(-1, &s, 0) > 0;) {
  }
  ASSERT_NE(status, -1) << "the tool did not end";
  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  EXPECT_EQ(exit_code, 128 + kill_how.signal) << ReadFile(dir_ + "/stderr");
  ExpectTmpdirEmpty();
}

INSTANTIATE_TEST_SUITE_P(Signals, ProfileKillTest,
                         ::testing::Values(Kill{"TermToTheGroup", "SIGTERM to the group", SIGTERM, true},
                                           Kill{"KillToTheTool", "SIGKILL to the tool alone", SIGKILL, false},
                                           Kill{"TermToTheTool", "SIGTERM to the tool alone", SIGTERM, false}),
                         [](const ::testing::TestParamInfo<Kill>& p) { return std::string(p.param.id); });

}  // namespace
}  // namespace backendlab::tools
