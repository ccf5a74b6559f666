// The layout experiment as a library call: its options are checked, its rows
// and ratios have the promised shape and exact byte counts, and a stop
// request ends it with Cancelled.
#include "buffers/layout_experiment.h"

#include <csignal>

#include "base/interrupt.h"
#include "buffers/array_refcount.h"
#include "gtest/gtest.h"

namespace backendlab::buffers {
namespace {

SharedBuffers Size(const char* text) { return *ParseSharedBuffers(text); }

TEST(LayoutExperimentTest, RowsFollowTheOptionsWithExactBytesAndRatiosOfMeasuredPairs) {
  LayoutExperimentOptions options{.sizes = {Size("128MB"), Size("1GB")},
                                  .layouts = {Layout::kHash, Layout::kArray},
                                  .kernel = ScanKernel::kWord,
                                  .rounds = 1};
  absl::StatusOr<LayoutExperimentResult> result = RunLayoutExperiment(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rows.size(), 4u);
  const Layout kOrder[] = {Layout::kHash, Layout::kArray, Layout::kHash, Layout::kArray};
  for (size_t i = 0; i < 4; ++i) {
    const LayoutRow& row = result->rows[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(row.layout, kOrder[i]);
    EXPECT_EQ(row.size.nbuffers, i < 2 ? 16'384u : 131'072u);
    EXPECT_EQ(row.exit_check_us.count, 1);
    // `hash` keeps its inline entries whatever NBuffers; `array` 4 bytes a buffer.
    if (row.layout == Layout::kHash) {
      EXPECT_EQ(row.bytes_per_backend, 128u);
      EXPECT_FALSE(row.scan_gbps.has_value());
    } else {
      EXPECT_EQ(row.bytes_per_backend, sizeof(ArrayRefCount) + 4u * row.size.nbuffers);
      EXPECT_TRUE(row.scan_gbps.has_value());
      EXPECT_TRUE(row.read_baseline_gbps.has_value());
    }
  }
  // array and hash were measured, bytes was not: only array/hash ratios, by name.
  std::vector<std::string> names;
  for (const LayoutRatio& r : result->ratios) {
    names.push_back(r.name);
    EXPECT_EQ(r.by_size.size(), 2u) << r.name;
    for (const auto& [size, estimate] : r.by_size) {
      EXPECT_EQ(estimate.rounds, 1) << r.name << ": paired over the one round";
      EXPECT_FALSE(estimate.has_interval) << "one round has no interval";
      EXPECT_GT(estimate.ratio, 0);
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"exit_check_array_over_hash", "pin_unpin_hash_over_array_held_1",
                                             "pin_unpin_hash_over_array_held_64", "pin_unpin_hash_over_array_held_8",
                                             "pin_unpin_hash_over_array_random"}));
}

// Over several rounds every ratio is paired round by round and carries an
// interval holding it and the verdict the interval gives (which way it
// goes is the machine's: not asserted).
TEST(LayoutExperimentTest, RatiosArePairedOverRoundsWithIntervalsAndVerdicts) {
  LayoutExperimentOptions options{.sizes = {Size("1GB")}, .layouts = {Layout::kArray, Layout::kHash}, .rounds = 5};
  absl::StatusOr<LayoutExperimentResult> result = RunLayoutExperiment(options);
  ASSERT_TRUE(result.ok()) << result.status();
  bool found = false;
  for (const LayoutRatio& r : result->ratios) {
    for (const auto& [size, estimate] : r.by_size) {
      SCOPED_TRACE(r.name);
      EXPECT_EQ(estimate.rounds, 5);
      ASSERT_TRUE(estimate.has_interval);
      EXPECT_LE(estimate.interval.low, estimate.ratio);
      EXPECT_GE(estimate.interval.high, estimate.ratio);
      EXPECT_EQ(estimate.verdict, VerdictOf(estimate.interval, Better::kLower));
      found |= r.name == "exit_check_array_over_hash";
    }
  }
  EXPECT_TRUE(found);
}

TEST(LayoutExperimentTest, DuplicatedOrEmptyListsAreInvalidArgument) {
  const LayoutExperimentOptions duplicated_layout{.sizes = {Size("128MB")}, .layouts = {Layout::kHash, Layout::kHash}};
  EXPECT_TRUE(absl::IsInvalidArgument(RunLayoutExperiment(duplicated_layout).status()));
  const LayoutExperimentOptions duplicated_size{.sizes = {Size("1GB"), Size("1024MB")}, .layouts = {Layout::kHash}};
  absl::Status status = RunLayoutExperiment(duplicated_size).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("1GB given twice"), std::string::npos) << status;
  EXPECT_TRUE(absl::IsInvalidArgument(RunLayoutExperiment({.sizes = {}, .layouts = {Layout::kHash}}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(RunLayoutExperiment({.sizes = {Size("128MB")}, .layouts = {}}).status()));
}

TEST(LayoutExperimentTest, AStopRequestEndsTheRunWithCancelled) {
  RequestStop(SIGINT);
  absl::StatusOr<LayoutExperimentResult> result =
      RunLayoutExperiment({.sizes = {Size("128MB")}, .layouts = {Layout::kHash}, .rounds = 1000});
  ResetStopRequestForTesting();
  EXPECT_TRUE(absl::IsCancelled(result.status())) << result.status();
}

TEST(LayoutExperimentTest, FreshBackendCountsItsTableAndFindsNoLeak) {
  const std::vector<BufferId> touched = SpreadBuffers(kFreshPins, 16'384, 7);
  ASSERT_EQ(touched.size(), static_cast<size_t>(kFreshPins));
  absl::StatusOr<FreshBackend> fresh =
      RunFreshBackend<ArrayRefCount>(16'384, touched, ExitCheckPolicy::kAlways, ScanKernel::kNaive);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->bytes, sizeof(ArrayRefCount) + 4u * 16'384);
}

}  // namespace
}  // namespace backendlab::buffers
