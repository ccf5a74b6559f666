// The what-if names and libraries: each library preloaded into a probe
// that stands in for a server (tests/pgreal/what_if_probe.cc), with and
// without the library, and each change starting a real server.
#include "pgreal/what_if.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/private_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pgreal/internal/processes.h"
#include "pgreal/pg_run.h"
#include "pgreal/phase_rules.h"

namespace backendlab::pgreal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Ran {
  int exit_status = -1;
  std::string output;  // stdout and stderr
};

// The probe (`program`) with `preload` ("" for none) LD_PRELOADed, its
// output captured.
Ran RunProbe(const std::vector<std::string>& args, const std::string& preload,
             const std::string& program = WHAT_IF_PROBE_PATH) {
  absl::StatusOr<PrivateDir> dir = PrivateDir::Make("backendlab-what-if-test");
  EXPECT_TRUE(dir.ok()) << dir.status();
  internal::SpawnOptions spawn;
  spawn.log_path = dir->path() + "/out";
  if (!preload.empty()) spawn.environment.push_back("LD_PRELOAD=" + preload);
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  Ran ran;
  absl::StatusOr<pid_t> pid = internal::Spawn(argv, spawn);
  EXPECT_TRUE(pid.ok()) << pid.status();
  int status = 0;
  if (pid.ok() && waitpid(*pid, &status, 0) == *pid && WIFEXITED(status)) ran.exit_status = WEXITSTATUS(status);
  std::ifstream in(spawn.log_path);
  std::stringstream text;
  text << in.rdbuf();
  ran.output = text.str();
  return ran;
}

TEST(WhatIfNames, EachParsesToItsNameAndAnUnknownOneListsTheKnown) {
  for (const char* name : {"openssl-no-atexit", "quick-exit", "huge-pages", "setup-durations"}) {
    absl::StatusOr<WhatIf> w = ParseWhatIf(name);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->name(), name);
  }
  absl::StatusOr<WhatIf> preload = ParseWhatIf(absl::StrCat("preload:", WHAT_IF_PROBE_PATH));
  ASSERT_TRUE(preload.ok()) << preload.status();
  EXPECT_EQ(preload->kind, WhatIfKind::kPreload);
  EXPECT_EQ(preload->name(), absl::StrCat("preload:", WHAT_IF_PROBE_PATH));

  absl::StatusOr<WhatIf> unknown = ParseWhatIf("fast-exit");
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_THAT(unknown.status().message(), HasSubstr("quick-exit"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("preload:PATH"));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseWhatIf("preload:").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseWhatIf("preload:/no/such/library.so").status()));
  // A readable file that is no shared library is refused before any server
  // starts, naming why (the probe's /etc/passwd started a server first).
  const absl::Status not_elf = ParseWhatIf("preload:/etc/passwd").status();
  EXPECT_TRUE(absl::IsInvalidArgument(not_elf)) << not_elf;
  EXPECT_THAT(not_elf.message(), HasSubstr("not a shared library (no ELF header)"));
  const std::vector<std::string> twice = {"quick-exit", "quick-exit"};
  EXPECT_TRUE(absl::IsInvalidArgument(ParseWhatIfs(twice).status()));
}

TEST(WhatIfNames, AChangeAServerCannotTakeIsRefusedWithTheVersion) {
  ServerOptions old;
  old.installation.major = 14;
  absl::Status huge = ApplyWhatIf(*ParseWhatIf("huge-pages"), old);
  EXPECT_TRUE(absl::IsInvalidArgument(huge));
  EXPECT_THAT(huge.message(), HasSubstr("PostgreSQL 14"));
  ServerOptions fifteen;
  fifteen.installation.major = 15;
  absl::Status clock = ApplyWhatIf(*ParseWhatIf("setup-durations"), fifteen);
  EXPECT_TRUE(absl::IsInvalidArgument(clock));
  EXPECT_THAT(clock.message(), HasSubstr("18"));
  ServerOptions eighteen;
  eighteen.installation.major = 18;
  ASSERT_TRUE(ApplyWhatIf(*ParseWhatIf("setup-durations"), eighteen).ok());
  EXPECT_EQ(eighteen.what_if, "setup-durations");
  const Settings s = MeasurementSettings(eighteen);
  int logged = 0;
  for (const auto& [name, value] : s) {
    if (name != "log_connections") continue;
    EXPECT_EQ(value, "setup_durations");
    ++logged;
  }
  EXPECT_EQ(logged, 1);
}

TEST(QuickExit, OnceProcExitIsInProgressExitSkipsAtexitHandlersButFlushesStdio) {
  const std::string library = WhatIfLibraryPath(WhatIfKind::kQuickExit);
  const Ran stock = RunProbe({"quick-exit", "in-progress"}, "");
  EXPECT_EQ(stock.exit_status, 3);
  EXPECT_THAT(stock.output, HasSubstr("atexit ran"));
  EXPECT_THAT(stock.output, HasSubstr("buffered"));

  const Ran quick = RunProbe({"quick-exit", "in-progress"}, library);
  EXPECT_EQ(quick.exit_status, 3);
  EXPECT_THAT(quick.output, HasSubstr("backendlab what-if quick-exit: applied in process"));
  EXPECT_THAT(quick.output, Not(HasSubstr("atexit ran")));
  EXPECT_THAT(quick.output, HasSubstr("buffered"));

  // An exit() before PostgreSQL's callbacks ran is libc's own, handlers and all.
  const Ran early = RunProbe({"quick-exit", "not-in-progress"}, library);
  EXPECT_EQ(early.exit_status, 3);
  EXPECT_THAT(early.output, HasSubstr("atexit ran"));
}

TEST(QuickExit, InAProgramThatIsNotAServerItRefusesToStartSayingWhy) {
  absl::StatusOr<PrivateDir> dir = PrivateDir::Make("backendlab-what-if-test");
  ASSERT_TRUE(dir.ok());
  internal::SpawnOptions spawn;
  spawn.log_path = dir->path() + "/out";
  spawn.environment.push_back("LD_PRELOAD=" + WhatIfLibraryPath(WhatIfKind::kQuickExit));
  // /bin/true exports no proc_exit_inprogress.
  absl::Status s = internal::RunToEnd({"/bin/true"}, spawn);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(internal::FileTail(spawn.log_path, 3), HasSubstr("not applied: the program has no proc_exit_inprogress"));
}

TEST(OpensslNoAtexit, NoOpensslCleanupRunsAtExit) {
  const std::string library = WhatIfLibraryPath(WhatIfKind::kOpensslNoAtexit);
  const Ran stock = RunProbe({"openssl"}, "");
  EXPECT_EQ(stock.exit_status, 0);
  EXPECT_THAT(stock.output, HasSubstr("OPENSSL_cleanup ran"));

  const Ran changed = RunProbe({"openssl"}, library);
  EXPECT_EQ(changed.exit_status, 0);
  EXPECT_THAT(changed.output, HasSubstr("backendlab what-if openssl-no-atexit: applied in process"));
  EXPECT_THAT(changed.output, Not(HasSubstr("OPENSSL_cleanup ran")));
}

// Audit B24 of 2026-12-05: "applied" was said whenever OPENSSL_init_crypto
// returned 1, which an OpenSSL that ignores the flag (before 1.1.1b) does
// too.
TEST(OpensslNoAtexit, TheAppliedLineNamesTheOpensslVersion) {
  const Ran changed = RunProbe({"openssl"}, WhatIfLibraryPath(WhatIfKind::kOpensslNoAtexit));
  EXPECT_EQ(changed.exit_status, 0);
  EXPECT_THAT(changed.output, ::testing::ContainsRegex("openssl-no-atexit: applied in process [0-9]+ \\(OpenSSL [0-9]"));
}

TEST(OpensslNoAtexit, AnOpensslBefore111bIsRefusedWithItsVersion) {
  const Ran old = RunProbe({}, WhatIfLibraryPath(WhatIfKind::kOpensslNoAtexit), WHAT_IF_FAKE_OPENSSL_PROBE_PATH);
  EXPECT_EQ(old.exit_status, 1) << old.output;
  EXPECT_THAT(old.output, HasSubstr("openssl-no-atexit: not applied: OpenSSL 1.1.1a  20 Nov 2018"));
  EXPECT_THAT(old.output, HasSubstr("1.1.1b"));
  EXPECT_THAT(old.output, Not(HasSubstr("applied in process")));
}

// B24: a shim left LD_PRELOAD naming itself, so every program the server
// executes (archive_command, COPY ... PROGRAM) loaded it too, and
// quick-exit made such a program exit with status 1.
TEST(WhatIfLibraries, EachRemovesItselfFromLdPreloadOnceLoaded) {
  for (WhatIfKind kind : {WhatIfKind::kQuickExit, WhatIfKind::kOpensslNoAtexit}) {
    const std::string library = WhatIfLibraryPath(kind);
    const Ran alone = RunProbe({"ld-preload"}, library);
    EXPECT_EQ(alone.exit_status, 0) << alone.output;
    EXPECT_THAT(alone.output, HasSubstr("LD_PRELOAD=(unset)")) << library;
    // Another library in the list stays, whichever separator ld.so read.
    const Ran with_other = RunProbe({"ld-preload"}, absl::StrCat("libm.so.6 ", library, ":libm.so.6"));
    EXPECT_THAT(with_other.output, HasSubstr("LD_PRELOAD=libm.so.6:libm.so.6\n")) << library;
  }
}

// A profile of `samples` backend stacks, each under its phase.
struct SampledStack {
  std::vector<std::string> frames;
  std::string phase;
  int64_t samples;
};
ServerProfile ProfileOf(const std::vector<SampledStack>& stacks) {
  ServerProfile p;
  for (const NamedValue<RealPhase>& phase : kRealPhaseNames) p.phases.push_back({std::string(phase.name), 0});
  p.phases.push_back({std::string(kUnclaimed), 0});
  for (const SampledStack& s : stacks) {
    std::vector<std::string> rooted = {std::string(kBackendRole)};
    rooted.insert(rooted.end(), s.frames.begin(), s.frames.end());
    p.stacks.Add(rooted, s.samples);
    for (PhaseSamples& row : p.phases) {
      if (row.phase == s.phase) row.samples += s.samples;
    }
  }
  p.server_samples = p.stacks.total_samples();
  return p;
}

TEST(WhatIfProfile, ThePhasesThatShrankAndTheFunctionsThatLeftAreComputedAgainstTheStockRow) {
  PgTargetResult stock;
  stock.label = "15/128MB";
  stock.key.bindir = "/pg15";
  stock.key.major = 15;
  stock.key.shared_buffers_bytes = 128 << 20;
  stock.profiles.push_back(ProfileOf({{{"PostgresMain", "InitPostgres"}, "init", 60},
                                      {{"proc_exit", "exit", "OPENSSL_cleanup"}, "exit", 30},
                                      {{"proc_exit", "exit", "_dl_fini", "rare"}, "exit", 9},
                                      {{"proc_exit", "exit", "tiny"}, "exit", 1}}));
  PgTargetResult quick = stock;
  quick.label = "15/128MB +quick-exit";
  quick.key.what_if = WhatIf{WhatIfKind::kQuickExit, ""};
  quick.profiles = {ProfileOf({{{"PostgresMain", "InitPostgres"}, "init", 60}, {{"proc_exit", "exit", "_exit"}, "exit", 1}})};
  std::vector<PgTargetResult> targets = {stock, quick};
  std::vector<ServerStats> stats(2);
  stats[0].has_cpu = stats[1].has_cpu = true;
  stats[0].cpu_us.median = 1000;
  stats[1].cpu_us.median = 610;

  const std::vector<ProfileChange> changes = ComputeProfileChanges(targets, stats);
  ASSERT_EQ(changes.size(), 1u) << "the what-if row only";
  const ProfileChange& c = changes[0];
  EXPECT_EQ(c.target, 1u);
  EXPECT_EQ(c.baseline, 0u);
  EXPECT_EQ(c.profiler, "perf");
  ASSERT_EQ(c.phases.size(), std::size(kRealPhaseNames) + 1);
  EXPECT_EQ(c.undone, KeyPart::kWhatIf);
  for (const PhaseChange& p : c.phases) {
    if (p.phase == "exit") {
      EXPECT_DOUBLE_EQ(p.baseline_percent, 40);
      EXPECT_DOUBLE_EQ(p.baseline_us, 400);  // 40 % of 1000 us
      EXPECT_NEAR(p.row_percent, 100.0 / 61, 1e-9);
      EXPECT_NEAR(p.row_us, 10, 1e-9);  // 1/61 of 610 us
    }
    if (p.phase == "init") {
      EXPECT_NEAR(p.row_us, 600, 1e-9);
    }
  }
  // On 1 % or more of the stock backends' samples and on none of the
  // what-if's, most samples first: "tiny" (1 %) is in, "exit" stays.
  std::vector<std::string> gone;
  for (const profiling::FunctionSamples& f : c.gone) gone.push_back(f.name);
  EXPECT_EQ(gone, (std::vector<std::string>{"OPENSSL_cleanup", "_dl_fini", "rare", "tiny"}));
  EXPECT_EQ(c.gone[0].total, 30);

  // Without the stock row's profile there is nothing to set it against.
  targets[0].profiles.clear();
  EXPECT_TRUE(ComputeProfileChanges(targets, stats).empty());
}

}  // namespace
}  // namespace backendlab::pgreal
