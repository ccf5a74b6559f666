// ComputeServerStats on hand-made rounds: medians with their intervals,
// ratios paired round by round, the baseline's own ratio exactly 1, and
// what is left out when a source counted no CPU.
#include <cmath>
#include <vector>

#include "base/server_usage.h"
#include "gtest/gtest.h"

namespace backendlab {
namespace {

ServerUsage Usage(int64_t connections, int64_t cpu_ns) {
  ServerUsage u;
  u.connections = connections;
  u.cpu_ns = cpu_ns;
  return u;
}

TEST(ServerStatsTest, RatiosArePairedWithinRoundsAndTheBaselineIsOne) {
  // Round 1: A at 1.2x B's rate and 0.8x its CPU per connection; round 2:
  // 1.0x and 1.0x. B's conn/s drifts 100 -> 200 between the rounds: a
  // quotient of medians would say 1.1/1.5 for the rate, the pairing says
  // sqrt(1.2 * 1.0).
  const std::vector<double> a_rates = {120, 200}, b_rates = {100, 200};
  const std::vector<ServerUsage> a_server = {Usage(10, 8'000'000), Usage(20, 40'000'000)};
  const std::vector<ServerUsage> b_server = {Usage(10, 10'000'000), Usage(10, 20'000'000)};
  const MeasuredRounds a{a_rates, a_server}, b{b_rates, b_server};
  const ServerStats s = ComputeServerStats(a, &b);
  EXPECT_DOUBLE_EQ(s.rate.median, 160);
  ASSERT_TRUE(s.has_cpu);
  EXPECT_DOUBLE_EQ(s.cpu_us.median, (800.0 + 2000.0) / 2);
  ASSERT_TRUE(s.rate_vs_baseline && s.cpu_vs_baseline);
  EXPECT_NEAR(s.rate_vs_baseline->ratio, std::sqrt(1.2), 1e-12);
  EXPECT_NEAR(s.cpu_vs_baseline->ratio, std::sqrt(0.8), 1e-12);
  EXPECT_EQ(s.cpu_vs_baseline->rounds, 2);
  EXPECT_TRUE(s.cpu_vs_baseline->has_interval);
  EXPECT_TRUE(s.cpu_vs_baseline->interval.Covers(s.cpu_vs_baseline->ratio));

  const ServerStats self = ComputeServerStats(b, &b);
  ASSERT_TRUE(self.rate_vs_baseline && self.cpu_vs_baseline);
  EXPECT_TRUE(self.rate_vs_baseline->self);
  EXPECT_EQ(self.cpu_vs_baseline->ratio, 1.0);

  const ServerStats alone = ComputeServerStats(a, nullptr);
  EXPECT_FALSE(alone.rate_vs_baseline) << "no baseline: no ratio";
}

TEST(ServerStatsTest, NoCpuWithoutEveryRoundCountedAndRowsAheadPairWhatBothHave) {
  const std::vector<double> a_rates = {100, 110, 120}, b_rates = {100, 100};
  const std::vector<ServerUsage> none;
  const MeasuredRounds a{a_rates, none}, b{b_rates, none};
  const ServerStats s = ComputeServerStats(a, &b);
  EXPECT_FALSE(s.has_cpu) << "no usage counted";
  EXPECT_FALSE(s.cpu_vs_baseline);
  ASSERT_TRUE(s.rate_vs_baseline);
  EXPECT_EQ(s.rate_vs_baseline->rounds, 2) << "a run stopped early: the rounds both rows have";
  EXPECT_NEAR(s.rate_vs_baseline->ratio, std::sqrt(1.1), 1e-12);
  const std::vector<ServerUsage> zero = {Usage(10, 0), Usage(10, 5'000)};
  const ServerStats z = ComputeServerStats(MeasuredRounds{b_rates, zero}, nullptr);
  EXPECT_FALSE(z.has_cpu) << "a round with no CPU counted (clock ticks too coarse) is not a figure";
}

// The postmaster's own CPU per connection and the ceiling it sets: each
// round's one CPU-second over it, their median; absent unless every round
// counted it.
TEST(ServerStatsTest, ThePostmastersCeilingIsOneCpuSecondOverItsCpuPerConnection) {
  const std::vector<double> rates = {100, 100, 100};
  std::vector<ServerUsage> rounds = {Usage(100, 50'000'000), Usage(200, 100'000'000), Usage(100, 50'000'000)};
  rounds[0].postmaster_cpu_ns = 10'000'000;  // 100 us per connection: 10000 conn/s
  rounds[1].postmaster_cpu_ns = 50'000'000;  // 250 us: 4000 conn/s
  rounds[2].postmaster_cpu_ns = 20'000'000;  // 200 us: 5000 conn/s
  const ServerStats s = ComputeServerStats(MeasuredRounds{rates, rounds}, nullptr);
  ASSERT_TRUE(s.has_postmaster_cpu);
  EXPECT_DOUBLE_EQ(s.postmaster_cpu_us.median, 200);
  EXPECT_DOUBLE_EQ(s.ceiling.median, 5000);
  EXPECT_EQ(s.ceiling.count, 3);
  EXPECT_EQ(PerConnectionOf(Merged(rounds)).postmaster_cpu_us, 80'000.0 / 400);

  rounds[1].postmaster_cpu_ns = -1;  // a round that could not count it
  const ServerStats missing = ComputeServerStats(MeasuredRounds{rates, rounds}, nullptr);
  EXPECT_FALSE(missing.has_postmaster_cpu);
  EXPECT_EQ(Merged(rounds).postmaster_cpu_ns, -1) << "a figure missing from a round stays missing in the sum";
  EXPECT_TRUE(missing.has_cpu) << "the whole server's CPU does not depend on it";
}

// The precision check's figure: the widest ratio's relative half-width,
// a ratio with no interval counting as 1, a baseline's own and an absent
// one as 0.
RatioEstimate Ratio(int rounds, double ratio, double low, double high) {
  RatioEstimate r;
  r.rounds = rounds;
  r.ratio = ratio;
  r.interval = Interval{low, high};
  r.has_interval = rounds >= 2;
  return r;
}

TEST(ServerStatsTest, WorstHalfWidthIsTheWidestRatioAndOneWithoutAnInterval) {
  ServerStats a, b;
  a.rate_vs_baseline = Ratio(8, 2.0, 1.9, 2.1);
  b.cpu_vs_baseline = Ratio(8, 0.5, 0.45, 0.55);
  b.rate_vs_baseline = SelfRatio(8);
  const std::vector<ServerStats> two = {a, b};
  EXPECT_NEAR(WorstHalfWidth(two), 0.1, 1e-12) << "0.05 of 0.5 is wider than 0.1 of 2.0";
  EXPECT_EQ(WorstHalfWidth(std::vector<ServerStats>{ServerStats{}}), 0) << "no ratio: nothing to hold";
  ServerStats one_round;
  one_round.rate_vs_baseline = Ratio(1, 1.2, 0, 0);
  EXPECT_EQ(WorstHalfWidth(std::vector<ServerStats>{a, one_round}), 1) << "no interval yet";
}

}  // namespace
}  // namespace backendlab
