// RunInterleaved: round-robin order, and the stop request ending the rounds.
#include "base/interleaved.h"

#include <csignal>
#include <vector>

#include "gtest/gtest.h"

namespace backendlab {
namespace {

// The process-wide stop request ends interleaved rounds before the next run
// (defect 2: ^C was forgotten between configurations).
TEST(InterleavedTest, AStopEndsTheRoundsBeforeTheNextRun) {
  ResetStopRequestForTesting();
  int runs = 0;
  const absl::Status s = RunInterleaved("test", 3, 4, [&](size_t, int64_t) {
    if (++runs == 2) RequestStop(SIGTERM);  // as if it arrived during the second run
    return absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_EQ(runs, 2);
  ResetStopRequestForTesting();
  runs = 0;
  EXPECT_TRUE(RunInterleaved("test", 3, 4, [&](size_t, int64_t) { return ++runs, absl::OkStatus(); }).ok());
  EXPECT_EQ(runs, 12);
}

TEST(InterleavedTest, EachRoundStartsOneFurtherAlong) {
  ResetStopRequestForTesting();
  std::vector<size_t> order;
  std::vector<int64_t> after;
  ASSERT_TRUE(RunInterleaved(
                  "test", 2, 3, [&](size_t i, int64_t) { return order.push_back(i), absl::OkStatus(); },
                  [&](int64_t round) { return after.push_back(round), absl::OkStatus(); })
                  .ok());
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 1, 2, 0}));
  EXPECT_EQ(after, (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace backendlab
