// The real `backendlab profile`: outputs a user can open, usage errors, a
// missing perf, and nothing left behind.
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "profiling/folded_stacks.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::ReadFile;
using test_util::RunResult;

// A private TMPDIR for the run's socket directory and sample file, which
// must be empty again afterwards; outputs go to dir_/out.
class ProfileCliTest : public test_util::PrivateTmpdirTest {
 protected:
  // The CLI's postmaster and backends, should they outlive it, are
  // reparented to this test process (a subreaper), where ChildrenOf sees them.
  static void SetUpTestSuite() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

  // A small array/always run: enough exit-check samples in about a second.
  // A flag in `extra` replaces the default of the same name.
  RunResult Profile(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {BACKENDLAB_CLI_PATH, "profile"};
    const std::vector<std::string> defaults = {"--layout=array", "--exit-check=always", "--shared-buffers=1GB",
                                               "--connections=30", "--warmup=2", "--work-lookups=10",
                                               "--clock=wall", "--frequency=5000", "--out=" + dir_ + "/out"};
    for (const std::string& d : defaults) {
      const std::string name = d.substr(0, d.find('=') + 1);
      if (std::none_of(extra.begin(), extra.end(), [&](const std::string& a) { return a.starts_with(name); })) {
        argv.push_back(d);
      }
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return test_util::RunProgram(argv, dir_);
  }

  void ExpectNothingLeft() {
    EXPECT_TRUE(TmpdirIsEmpty()) << "files left in TMPDIR " << tmpdir_;
    EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty());
  }

};

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
  ExpectNothingLeft();
}

TEST_F(ProfileCliTest, UnwritableOutputIsARunFailure) {
  const RunResult r = Profile({"--out=" + dir_ + "/no/such/dir"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab profile: cannot create ")) << r.err;
  ExpectNothingLeft();
}

TEST_F(ProfileCliTest, MissingPerfSaysHowToGetItAndKeepsTheBuiltInProfile) {
  test_util::ScopedEnv no_perf("PATH", dir_ + "/empty-path");
  const RunResult r = Profile({"--perf"});  // alone: on
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab profile: --perf: perf is not installed")) << r.err;
  EXPECT_NE(r.err.find("apt-get install linux-perf"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/out/phases.svg")) << "the built-in profile is written all the same";
  ExpectNothingLeft();
}

// perf itself, where it is installed and allowed: its stacks are folded the
// same way, side by side with the sampler's.
TEST_F(ProfileCliTest, PerfRunsTheSameWorkloadSideBySide) {
  if (access("/usr/bin/perf", X_OK) != 0) GTEST_SKIP() << "perf is not installed here";
  // Whether this machine lets perf record at all, asked of perf itself.
  const RunResult probe = test_util::RunProgram(
      {"/usr/bin/perf", "record", "-q", "-e", "cpu-clock", "-o", dir_ + "/probe.data", "--", "/bin/true"}, dir_);
  if (probe.exit_code != 0) GTEST_SKIP() << "perf record is refused here: " << probe.err;
  const RunResult r = Profile({"--perf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<profiling::FoldedStacks> perf = profiling::FoldedStacks::Parse(ReadFile(dir_ + "/out/perf.folded"));
  ASSERT_TRUE(perf.ok()) << perf.status();
  EXPECT_GT(perf->Under("backend").total_samples(), 0) << "backends are named `backend` for perf";
  EXPECT_NE(r.out.find("agreement: "), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/perf.data.old"));
  ExpectNothingLeft();
}

}  // namespace
}  // namespace backendlab::tools
