// lifecycle's names come from one table each (base/names.h), in the words
// the CLI, JSON and docs use.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/cycle.h"

namespace backendlab::lifecycle {
namespace {

TEST(LifecycleNamesTest, PhasesInOrder) {
  std::vector<std::string> names;
  for (Phase p : kAllPhases) names.emplace_back(PhaseName(p));
  EXPECT_EQ(names, (std::vector<std::string>{"fork", "init_buffers", "init_catcache", "init_other", "work", "exit_check",
                                             "teardown", "reap"}));
}

TEST(LifecycleNamesTest, SampleTagsArePhasesThenTheirOwn) {
  for (Phase p : kAllPhases) EXPECT_EQ(SampleTagName(static_cast<int32_t>(p)), PhaseName(p));
  EXPECT_EQ(SampleTagName(kSampleTagWait), "wait");
  EXPECT_EQ(SampleTagName(kSampleTagPostmaster), "postmaster");
  EXPECT_EQ(SampleTagName(kSampleTagClient), "client");
  EXPECT_EQ(SampleTagName(kNumSampleTags), "tag11");
  EXPECT_EQ(SampleTagName(-1), "tag-1");
}

TEST(LifecycleNamesTest, ModesRoundTripAndAnUnknownOneIsNamed) {
  for (Mode m : {Mode::kFork, Mode::kInproc, Mode::kThread, Mode::kPrefork}) EXPECT_EQ(ParseMode(ModeName(m)).value_or(Mode::kFork), m);
  EXPECT_EQ(ModeName(Mode::kInproc), "inproc");
  absl::StatusOr<Mode> bad = ParseMode("threads");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "unknown mode 'threads' (expected fork, inproc, thread or prefork)");
}

}  // namespace
}  // namespace backendlab::lifecycle
