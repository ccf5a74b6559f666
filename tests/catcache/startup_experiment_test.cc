// The startup experiment as a library call: options are checked, every
// lookup is a hit or a load, and forked runs reap every child and unmap the
// page they report through, also when they fail or are stopped.
#include "catcache/startup_experiment.h"

#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <memory>
#include <string>

#include "base/interrupt.h"
#include "catcache/catcache.h"
#include "gtest/gtest.h"

namespace backendlab::catcache {
namespace {

// Lines of /proc/self/maps for shared anonymous memory: the page a forked
// backend reports through.
int SharedAnonymousMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find("/dev/zero") != std::string::npos;
  return n;
}

void ExpectNoChildLeft() {
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1) << "a forked backend was left unreaped";
  EXPECT_EQ(errno, ECHILD);
}

TEST(StartupExperimentTest, InProcessRowsFollowTheOptionsAndCountEveryLookup) {
  absl::StatusOr<StartupExperimentResult> result = RunStartupExperiment(
      {.catcaches = {BucketStrategy::kExpansible, BucketStrategy::kPalloc0}, .syscaches = {"pg17"}, .lookups = 300,
       .rounds = 2});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rows.size(), 2u);
  EXPECT_EQ(result->rows[0].catcache, BucketStrategy::kExpansible);
  EXPECT_EQ(result->rows[1].catcache, BucketStrategy::kPalloc0);
  for (const StartupRow& row : result->rows) {
    EXPECT_EQ(row.syscache, "pg17");
    EXPECT_EQ(row.process, Process::kInproc);
    EXPECT_EQ(row.init_us.count, 2);
    EXPECT_EQ(row.last.hits + row.last.entries, 300) << "every lookup a hit or a load";
  }
  EXPECT_EQ(result->rows[1].last.initial_bucket_bytes, 2444 * 8) << "17's 2,444 buckets";
  ASSERT_EQ(result->zeroing.size(), 1u);
  EXPECT_EQ(result->zeroing[0].bytes, 2444u * 8);
  EXPECT_TRUE(result->zeroing[0].palloc0.has_value());
  ASSERT_EQ(result->expansible_vs_palloc0.size(), 1u);
  EXPECT_EQ(result->expansible_vs_palloc0[0].syscache, "pg17");
}

TEST(StartupExperimentTest, BadOptionsAreInvalidArgument) {
  auto status = [](StartupExperimentOptions o) { return RunStartupExperiment(o).status(); };
  absl::Status s = status({.catcaches = {BucketStrategy::kBss, BucketStrategy::kBss}, .syscaches = {"pg17"}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("catcache 'bss' given twice"), std::string::npos) << s;
  s = status({.catcaches = {BucketStrategy::kBss}, .syscaches = {"pg17", "pg17"}});
  EXPECT_NE(s.message().find("syscache 'pg17' given twice"), std::string::npos) << s;
  s = status({.catcaches = {BucketStrategy::kBss}, .syscaches = {"pg96"}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("unknown syscache 'pg96'"), std::string::npos) << s;
  EXPECT_TRUE(absl::IsInvalidArgument(status({.catcaches = {}, .syscaches = {"pg17"}})));
  EXPECT_TRUE(absl::IsInvalidArgument(status({.catcaches = {BucketStrategy::kBss}, .syscaches = {}})));
}

TEST(StartupExperimentTest, ForkRunsReapEveryChildAndUnmapTheReportPage) {
  const int mappings_before = SharedAnonymousMappings();
  absl::StatusOr<StartupExperimentResult> result =
      RunStartupExperiment({.catcaches = {BucketStrategy::kPalloc0, BucketStrategy::kBss},
                            .syscaches = {"pg17"},
                            .lookups = 200,
                            .fork = true,
                            .rounds = 2});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rows.size(), 3u) << "bss gets a touched-parent row";
  EXPECT_EQ(result->rows[2].process, Process::kForkTouchedParent);
  EXPECT_EQ(result->main_process, Process::kFork);
  for (const StartupRow& row : result->rows) EXPECT_EQ(row.last.hits + row.last.entries, 200);
  ExpectNoChildLeft();
  EXPECT_EQ(SharedAnonymousMappings(), mappings_before);
}

TEST(StartupExperimentTest, AFailedForkRunLeavesNothingBehind) {
  // While this process holds the bss region, the fork run cannot put it in a
  // parent's state: the run fails, as a run (not a usage) error.
  absl::StatusOr<SyscacheProfile> pg17 = BuiltinProfile("pg17");
  ASSERT_TRUE(pg17.ok());
  absl::StatusOr<std::unique_ptr<CatCacheSet>> holder = CatCacheSet::Create(BucketStrategy::kBss, *pg17);
  ASSERT_TRUE(holder.ok()) << holder.status();
  const int mappings_before = SharedAnonymousMappings();
  absl::Status status = RunStartupExperiment({.catcaches = {BucketStrategy::kPalloc0},
                                              .syscaches = {"pg17"},
                                              .lookups = 10,
                                              .fork = true,
                                              .rounds = 1})
                            .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  ExpectNoChildLeft();
  EXPECT_EQ(SharedAnonymousMappings(), mappings_before);
}

// A stop asked before the run: Cancelled at once, no child forked, no report
// page left mapped. (A stop during a forked run, which kills and reaps the
// child, is tested through the CLI in tests/tools/catcache_cli_test.cc.)
TEST(StartupExperimentTest, AStopRequestedBeforeAForkRunRunsNothingAndLeavesNothing) {
  const int mappings_before = SharedAnonymousMappings();
  RequestStop(SIGINT);
  absl::Status status = RunStartupExperiment({.catcaches = {BucketStrategy::kPalloc0},
                                              .syscaches = {"pg17"},
                                              .lookups = 10,
                                              .fork = true,
                                              .rounds = 1000})
                            .status();
  ResetStopRequestForTesting();
  EXPECT_TRUE(absl::IsCancelled(status)) << status;
  ExpectNoChildLeft();
  EXPECT_EQ(SharedAnonymousMappings(), mappings_before);
}

}  // namespace
}  // namespace backendlab::catcache
