// RunInterleaved: shuffled orders from a seed, rounds ended early, and the
// stop request ending the rounds.
#include "base/interleaved.h"

#include <algorithm>
#include <array>
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

TEST(InterleavedTest, EachRoundIsAShuffleOfEveryConfigurationRepeatableFromItsSeed) {
  ResetStopRequestForTesting();
  std::vector<size_t> order;
  std::vector<int64_t> after;
  ASSERT_TRUE(RunInterleaved(
                  "test", RoundPlan(4, 99), 5, [&](size_t i, int64_t) { return order.push_back(i), absl::OkStatus(); },
                  [&](int64_t round) { return after.push_back(round), absl::OkStatus(); })
                  .ok());
  ASSERT_EQ(order.size(), 20u);
  for (int64_t round = 0; round < 4; ++round) {
    const std::vector<size_t> expected = RoundOrder(99, round, 5);
    EXPECT_EQ(std::vector<size_t>(order.begin() + round * 5, order.begin() + round * 5 + 5), expected);
    std::vector<size_t> sorted = expected;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<size_t>{0, 1, 2, 3, 4}));
  }
  EXPECT_EQ(after, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(RoundOrder(99, 3, 5), RoundOrder(99, 3, 5));
}

// Over many rounds every configuration runs first about as often as any
// other, and follows each other one: no fixed neighbour, no fixed place.
TEST(InterleavedTest, ShuffledOrdersBalancePlacesAndNeighbours) {
  constexpr int kRounds = 3000;
  std::array<int, 3> first{};
  std::array<std::array<int, 3>, 3> after{};  // after[x][y]: y ran right after x
  for (int64_t round = 0; round < kRounds; ++round) {
    const std::vector<size_t> o = RoundOrder(kDefaultOrderSeed, round, 3);
    ++first[o[0]];
    for (size_t k = 1; k < o.size(); ++k) ++after[o[k - 1]][o[k]];
  }
  // Each first 1000 times (sd 26), and each ordered pair adjacent 1000
  // times (2 of a round's 6 ordered pairs are): 200 is far outside chance,
  // and a rotation by one, which never runs 0 right after 1, fails it.
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_NEAR(first[c], kRounds / 3, 200) << c;
    for (size_t d = 0; d < 3; ++d) {
      if (c == d) continue;
      EXPECT_NEAR(after[c][d], kRounds / 3, 200) << c << " then " << d;
    }
  }
}

// Groups run as blocks: each group's configurations together, in a
// shuffled order, and the groups themselves in a shuffled order.
TEST(InterleavedTest, GroupsRunAsBlocksInShuffledOrders) {
  const std::vector<size_t> groups = {0, 0, 0, 1, 1, 1, 2, 2, 2};  // e.g. three shared_buffers sizes
  std::array<int, 3> first_group{};
  bool within_group_varies = false;
  for (int64_t round = 0; round < 300; ++round) {
    const std::vector<size_t> o = RoundOrder(5, round, groups.size(), groups);
    std::vector<size_t> sorted = o;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
    for (size_t block = 0; block < 3; ++block) {
      for (size_t k = 1; k < 3; ++k) ASSERT_EQ(groups[o[block * 3 + k]], groups[o[block * 3]]) << "round " << round;
    }
    ++first_group[groups[o[0]]];
    within_group_varies |= o[0] % 3 != 0;
  }
  for (int n : first_group) EXPECT_NEAR(n, 100, 50);  // each group first about a third of the time (sd 8)
  EXPECT_TRUE(within_group_varies);
  EXPECT_EQ(RoundOrder(5, 7, 9, groups), RoundOrder(5, 7, 9, groups));
}

// after_round may end the rounds: what --precision does once it is met.
TEST(InterleavedTest, AfterRoundCanEndTheRoundsEarly) {
  ResetStopRequestForTesting();
  int runs = 0;
  const absl::Status s = RunInterleaved(
      "test", 10, 2, [&](size_t, int64_t) { return ++runs, absl::OkStatus(); },
      [&](int64_t round) -> absl::StatusOr<bool> { return round < 2; });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(runs, 6);  // rounds 0, 1 and 2
  runs = 0;
  const absl::Status failed = RunInterleaved(
      "test", 10, 2, [&](size_t, int64_t) { return ++runs, absl::OkStatus(); },
      [&](int64_t) -> absl::StatusOr<bool> { return absl::InternalError("boom"); });
  EXPECT_EQ(failed.message(), "boom");
  EXPECT_EQ(runs, 2);
}

// RunUntilDecided: needed() is asked at the looks alone (rounds 6, 12, 24,
// ..., and the count's, which ends the run whatever the answer); a
// configuration it says is done is measured no more, and the run ends at
// the look where none is left; a max_time shorter than a round ends the run
// after its first round. Each run says which ended it.
TEST(InterleavedTest, RunUntilDecidedAsksAtTheLooksAndDropsWhatIsDone) {
  ResetStopRequestForTesting();
  std::vector<int> runs(3);
  auto measure = [&](size_t i, int64_t) { return ++runs[i], absl::OkStatus(); };
  std::vector<std::vector<bool>> answers = {{true, true, false}, {false, false, false}};  // after rounds 6 and 12
  size_t asked = 0;
  auto needed = [&] { return answers[std::min(asked++, answers.size() - 1)]; };
  PreciseRun run;
  ASSERT_TRUE(RunUntilDecided("test", 100, Precision{}, 3, measure, needed, run).ok());
  EXPECT_EQ(run.rounds, 12);
  EXPECT_EQ(asked, 2u) << "asked after rounds 6 and 12 only";
  EXPECT_EQ(runs, (std::vector<int>{12, 12, 6})) << "the third left after the first look";
  EXPECT_EQ(run.ended_by, RoundsEnd::kDecided);
  EXPECT_EQ(run.looks, (std::vector<int64_t>{6, 12, 24, 48, 96, 100}));
  EXPECT_EQ(run.looks_taken, 2);

  asked = 0;
  answers = {{true, true, true}};
  ASSERT_TRUE(RunUntilDecided("test", 12, Precision{}, 3, measure, needed, run).ok());
  EXPECT_EQ(run.rounds, 12);
  EXPECT_EQ(asked, 1u) << "asked after round 6: the 12th ends on the count whatever the answer";
  EXPECT_EQ(run.ended_by, RoundsEnd::kCount);

  asked = 0;
  ASSERT_TRUE(RunUntilDecided("test", 5, Precision{}, 3, measure, needed, run).ok());
  EXPECT_EQ(run.rounds, 5);
  EXPECT_EQ(asked, 0u) << "fewer rounds than the first look: never asked";
  EXPECT_TRUE(run.looks.empty());
  EXPECT_EQ(run.ended_by, RoundsEnd::kCount);

  runs.assign(3, 0);
  auto slow = [&](size_t i, int64_t) {
    absl::SleepFor(absl::Milliseconds(1));
    return ++runs[i], absl::OkStatus();
  };
  ASSERT_TRUE(RunUntilDecided("test", 9, Precision{0, absl::Nanoseconds(1)}, 2, slow, needed, run).ok());
  EXPECT_EQ(run.rounds, 1);
  EXPECT_EQ(run.ended_by, RoundsEnd::kTime);
  EXPECT_EQ(run.looks_taken, 1) << "the end's statistics are a look, in place of round 6's";
  EXPECT_EQ(runs[0] + runs[1], 2);
  EXPECT_GE(run.elapsed, absl::Milliseconds(2));
}

}  // namespace
}  // namespace backendlab
