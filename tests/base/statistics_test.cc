// The statistics layer on data with a known answer: t quantiles, paired
// ratios against a hand-computed example, the coverage of the intervals in
// simulation, and verdicts on planted effects.
#include "base/statistics.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/coverage_study.h"
#include "gtest/gtest.h"

namespace backendlab {
namespace {

TEST(StatisticsTest, StudentTQuantilesAreTheTabulatedOnes) {
  // Two-sided 95 %: every table of Student's t.
  EXPECT_NEAR(StudentTQuantile(1), 12.7062, 1e-3);
  EXPECT_NEAR(StudentTQuantile(2), 4.3027, 1e-4);
  EXPECT_NEAR(StudentTQuantile(4), 2.7764, 1e-4);
  EXPECT_NEAR(StudentTQuantile(10), 2.2281, 1e-4);
  EXPECT_NEAR(StudentTQuantile(30), 2.0423, 1e-4);
  EXPECT_NEAR(StudentTQuantile(100000), 1.9600, 1e-3);
  EXPECT_NEAR(StudentTQuantile(10, 0.99), 3.1693, 1e-3);
  EXPECT_EQ(StudentTQuantile(10), StudentTQuantile(10));  // the remembered one
}

// Worked by hand: log ratios ln 1.1, ln 1.2, ln 1 = 0.09531, 0.18232, 0;
// mean 0.092544, sample sd 0.091192, t(2) = 4.3027, half-width
// 4.3027 * 0.091192 / sqrt(3) = 0.22654; exp of mean and of mean -/+ half.
TEST(StatisticsTest, PairedRatioMatchesAHandComputedExample) {
  const std::vector<double> a = {110, 120, 100}, b = {100, 100, 100};
  const RatioEstimate r = PairedRatio(a, b, Better::kHigher);
  EXPECT_EQ(r.rounds, 3);
  EXPECT_NEAR(r.ratio, 1.09696, 1e-5);
  ASSERT_TRUE(r.has_interval);
  EXPECT_NEAR(r.interval.low, 0.87460, 1e-5);
  EXPECT_NEAR(r.interval.high, 1.37586, 1e-5);
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_EQ(VerdictName(r.verdict), "~");
  // A/B and B/A say the same thing.
  const RatioEstimate back = PairedRatio(b, a, Better::kHigher);
  EXPECT_NEAR(back.ratio, 1 / r.ratio, 1e-12);
  EXPECT_NEAR(back.interval.low, 1 / r.interval.high, 1e-12);
}

// Pairing is the point: a machine that drifts tenfold between rounds, with
// A 10 % dearer than B in every round, gives a ratio of exactly 1.1 and a
// verdict, where the two configurations' own spreads overlap entirely.
TEST(StatisticsTest, PairedRatiosCancelDriftBetweenRounds) {
  const std::vector<double> b = {1, 10, 3, 7, 2};
  std::vector<double> a;
  for (double x : b) a.push_back(1.1 * x);
  const RatioEstimate cost = PairedRatio(a, b, Better::kLower);
  EXPECT_NEAR(cost.ratio, 1.1, 1e-12);
  EXPECT_NEAR(cost.interval.low, 1.1, 1e-9);
  EXPECT_NEAR(cost.interval.high, 1.1, 1e-9);
  EXPECT_EQ(cost.verdict, Verdict::kSlower);  // a cost 10 % higher
  EXPECT_EQ(PairedRatio(a, b, Better::kHigher).verdict, Verdict::kFaster);  // a rate 10 % higher
}

TEST(StatisticsTest, RoundsWithoutAFigureAreLeftOutAndOneRoundHasNoInterval) {
  const std::vector<double> a = {2, 0, 4}, b = {1, 3, -1};
  const RatioEstimate r = PairedRatio(a, b, Better::kHigher);
  EXPECT_EQ(r.rounds, 1);
  EXPECT_DOUBLE_EQ(r.ratio, 2);
  EXPECT_FALSE(r.has_interval);
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_EQ(PairedRatio({}, {}, Better::kHigher).rounds, 0);
}

// One simulated comparison: `rounds` rounds; in each, the machine's speed
// drifts (a factor shared by both configurations, log-sd 0.3), and each
// configuration's figure is the mean cost of `connections` connections,
// exponentially distributed about its true cost (B 1, A `true_ratio`):
// a Gamma(connections, 1 / connections) draw.
RatioEstimate SimulatedComparison(std::mt19937_64& rng, int rounds, int connections, double true_ratio) {
  std::lognormal_distribution<double> drift(0, 0.3);
  std::gamma_distribution<double> mean_cost(connections, 1.0 / connections);
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {
    const double d = drift(rng);
    a.push_back(d * true_ratio * mean_cost(rng));
    b.push_back(d * mean_cost(rng));
  }
  return PairedRatio(a, b, Better::kLower);
}

// The bar: the 95 % interval covers the true ratio in 93-97 % of
// 2,000 draws (binomial sd 0.49 %: the band is 4 sd wide each side, so no
// seed fails it by luck), for few rounds and for many.
TEST(StatisticsTest, IntervalsCoverTheTrueRatioNinetyFivePercentOfTheTime) {
  std::mt19937_64 rng(20261202);
  for (const int rounds : {3, 10, 30}) {
    int covered = 0;
    constexpr int kDraws = 2000;
    for (int i = 0; i < kDraws; ++i) covered += SimulatedComparison(rng, rounds, 50, 1.1).interval.Covers(1.1);
    const double coverage = static_cast<double>(covered) / kDraws;
    RecordProperty("coverage_" + std::to_string(rounds) + "_rounds", std::to_string(coverage));
    EXPECT_GE(coverage, 0.93) << rounds << " rounds";
    EXPECT_LE(coverage, 0.97) << rounds << " rounds";
  }
}

TEST(StatisticsTest, VerdictsAreRightOnPlantedEffectsOfZeroAndTenPercent) {
  std::mt19937_64 rng(7);
  constexpr int kDraws = 2000;
  int same = 0, slower = 0, faster = 0;
  for (int i = 0; i < kDraws; ++i) {
    same += SimulatedComparison(rng, 10, 2000, 1.0).verdict == Verdict::kUndecided;
    slower += SimulatedComparison(rng, 10, 2000, 1.1).verdict == Verdict::kSlower;   // A costs 10 % more
    faster += SimulatedComparison(rng, 10, 2000, 1 / 1.1).verdict == Verdict::kFaster;
  }
  // No effect: `~` but for the 5 % the interval is allowed to miss
  // (binomial: 93 % is 4 sd below 95 %). A 10 % effect over 10 rounds of
  // 2,000 connections lies 9.5 standard errors from 1 (log 1.1 over
  // sqrt(2 / 2000 / 10)): missed essentially never.
  RecordProperty("same_of_2000", same);
  RecordProperty("slower_of_2000", slower);
  RecordProperty("faster_of_2000", faster);
  EXPECT_GE(same, kDraws * 93 / 100);
  EXPECT_GE(slower, kDraws * 99 / 100);
  EXPECT_GE(faster, kDraws * 99 / 100);
}

TEST(StatisticsTest, MedianIntervalsAreOrderStatistics) {
  std::vector<double> five = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(MedianWithInterval(five).median, 3);
  EXPECT_FALSE(MedianWithInterval(five).interval.has_value());  // [min, max] holds it with 93.75 % only
  std::vector<double> six = {6, 1, 5, 2, 4, 3};
  const MedianEstimate m6 = MedianWithInterval(six);
  EXPECT_DOUBLE_EQ(m6.median, 3.5);
  ASSERT_TRUE(m6.interval.has_value());
  EXPECT_DOUBLE_EQ(m6.interval->low, 1);
  EXPECT_DOUBLE_EQ(m6.interval->high, 6);
  // n = 100: P(Bin(100, 1/2) <= 39) = 0.0176 and <= 40 is 0.0284, so the
  // interval is [X(40), X(61)].
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  const MedianEstimate m100 = MedianWithInterval(hundred);
  ASSERT_TRUE(m100.interval.has_value());
  EXPECT_DOUBLE_EQ(m100.interval->low, 40);
  EXPECT_DOUBLE_EQ(m100.interval->high, 61);
  // Past 2^-1074 underflow: still an interval, not the median alone.
  std::vector<double> many(5000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i);
  const MedianEstimate big = MedianWithInterval(many);
  ASSERT_TRUE(big.interval.has_value());
  EXPECT_LT(big.interval->low, big.median - 30);
  EXPECT_GT(big.interval->high, big.median + 30);
}

// Order statistics hold the median with at least the stated confidence
// (for n = 20: [X(6), X(15)], 95.9 %), whatever the distribution.
TEST(StatisticsTest, MedianIntervalsCoverTheTrueMedian) {
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> cost(1.0);
  const double true_median = std::log(2.0);
  int covered = 0;
  constexpr int kDraws = 2000;
  for (int i = 0; i < kDraws; ++i) {
    std::vector<double> v(20);
    for (double& x : v) x = cost(rng);
    covered += MedianWithInterval(v).interval->Covers(true_median);
  }
  RecordProperty("median_covered_of_2000", covered);
  EXPECT_GE(covered, kDraws * 93 / 100);
  EXPECT_LE(covered, kDraws * 99 / 100);
}

// `same` where the whole interval lies within the band, symmetric in logs,
// even where it also excludes 1; else faster/slower; else ~.
TEST(StatisticsTest, SameIsAnIntervalInsideTheBand) {
  EXPECT_EQ(VerdictOf({0.99, 1.01}, Better::kHigher, 0.02), Verdict::kSame);
  EXPECT_EQ(VerdictOf({1 / 1.02, 1.02}, Better::kHigher, 0.02), Verdict::kSame) << "the band's edges are in it";
  EXPECT_EQ(VerdictOf({1.005, 1.015}, Better::kHigher, 0.02), Verdict::kSame) << "any difference is below 2 %";
  EXPECT_EQ(VerdictOf({1.005, 1.03}, Better::kHigher, 0.02), Verdict::kFaster);
  EXPECT_EQ(VerdictOf({1.005, 1.03}, Better::kLower, 0.02), Verdict::kSlower);
  EXPECT_EQ(VerdictOf({0.97, 1.01}, Better::kHigher, 0.02), Verdict::kUndecided);
  EXPECT_EQ(VerdictOf({0.99, 1.01}, Better::kHigher), Verdict::kUndecided) << "no band: never same";
  EXPECT_EQ(VerdictName(Verdict::kSame), "same");
}

// The hand-computed example's ~: its interval would exclude 1 once
// t(2) * sd / sqrt(n) < |mean|: n > (4.3027 * 0.091192 / 0.092544)^2 = 17.98.
TEST(StatisticsTest, AnUndecidedRatioSaysHowManyRoundsWouldLikelyDecideIt) {
  const std::vector<double> a = {110, 120, 100}, b = {100, 100, 100};
  const RatioEstimate r = PairedRatio(a, b, Better::kHigher, {.confidence = kConfidence, .same_within = 0.02});
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_EQ(r.rounds_to_decide, 18);
  EXPECT_EQ(PairedRatio(b, b, Better::kHigher, {.confidence = kConfidence, .same_within = 0.02}).rounds_to_decide, 0)
      << "zero spread: same, nothing to add";
  const std::vector<double> c = {110, 100 / 1.1, 110, 100 / 1.1}, d = {100, 100, 100, 100};
  EXPECT_EQ(PairedRatio(c, d, Better::kHigher).rounds_to_decide, -1) << "a point of 1, no band: no count decides it";
}

// LookRounds doubles from 6 to the count; one look is read at 95 %, more
// at more, yet less than Bonferroni's 1 - 0.05 / k over k looks (the looks'
// statistics are correlated), and the same at every call.
TEST(StatisticsTest, ThePerLookLevelLiesBetweenOneLookAndBonferroni) {
  EXPECT_EQ(LookRounds(1000), (std::vector<int64_t>{6, 12, 24, 48, 96, 192, 384, 768, 1000}));
  EXPECT_EQ(LookRounds(6), std::vector<int64_t>{6});
  EXPECT_TRUE(LookRounds(5).empty());
  EXPECT_EQ(PerLookConfidence(LookRounds(6)), kConfidence);
  const std::vector<int64_t> looks = LookRounds(1000);
  const double level = PerLookConfidence(looks);
  RecordProperty("per_look_confidence_1000", std::to_string(level));
  EXPECT_GT(level, 1 - 0.05 / 3);
  EXPECT_LT(level, 1 - 0.05 / 9);
  EXPECT_EQ(level, PerLookConfidence(looks));
  EXPECT_GT(PerLookConfidence(looks, 1 - 0.05 / 6), level) << "a family's member is read at more";
}

// The stopping rule as runs use it: looks at LookRounds(200), a ratio's run
// stopped at the first look that decides it (same within 2 %, or excluding
// 1), its interval read at PerLookConfidence. Rounds' log ratios are normal,
// sd 0.1 (a round of a few connections). With no difference, the interval
// at the stop holds 1 and the verdict is never faster or slower but for the
// 5 % allowed; read at 95 % at every look instead, the same rule errs far
// more often (each look is another chance to miss). 2,000 runs each:
// binomial sd 0.49 %.
TEST(StatisticsTest, IntervalsKeepTheirCoverageWhenTheRunStopsOnItsVerdicts) {
  const CoverageStudyResult r = StudyCoverage(
      {.max_rounds = 200, .same_within = 0.02, .true_ratio = 1, .runs = 2000, .seed = 20261206, .noise = NormalNoise(0.1)});
  RecordProperty("covered_of_2000", r.covered);
  RecordProperty("apart_of_2000", r.faster + r.slower);
  RecordProperty("naive_apart_of_2000", r.apart_naive);
  EXPECT_EQ(r.faster + r.slower + r.same + r.undecided, 2000);
  EXPECT_GE(r.covered, 2000 * 93 / 100);
  EXPECT_LE(r.faster + r.slower, 2000 * 7 / 100);
  EXPECT_GE(r.apart_naive, 2000 * 9 / 100) << "read at 95 % at every look, the rule would err past 5 %";
}

// Heavy tails (Student's t with 3 degrees of freedom: the rounds of a run
// on a busy machine have a kurtosis of 8 and more) keep the coverage too:
// the t interval is robust to them, at looks of 6 rounds and more.
TEST(StatisticsTest, IntervalsKeepTheirCoverageUnderHeavyTailedRounds) {
  const CoverageStudyResult r = StudyCoverage(
      {.max_rounds = 200, .same_within = 0.02, .true_ratio = 1, .runs = 2000, .seed = 7, .noise = StudentNoise(3, 0.1)});
  RecordProperty("covered_of_2000", r.covered);
  EXPECT_GE(r.covered, 2000 * 93 / 100);
  EXPECT_LE(r.faster + r.slower, 2000 * 7 / 100);
}

// At the band's edge (a true ratio 1 + the band) `same` is a wrong verdict:
// two one-sided tests at 2.5 % each, held over the looks, give it in at
// most 2.5 % of runs (binomial sd 0.35 % over 2,000). The ratio is slower
// in most runs that decide.
TEST(StatisticsTest, SameIsRareWhereTheDifferenceIsTheBandItself) {
  const CoverageStudyResult r = StudyCoverage(
      {.max_rounds = 400, .same_within = 0.02, .true_ratio = 1.02, .runs = 2000, .seed = 11, .noise = NormalNoise(0.05)});
  RecordProperty("same_of_2000", r.same);
  EXPECT_LE(r.same, 2000 * 4 / 100);
  EXPECT_EQ(r.faster, 0) << "a cost 2 % higher is never faster here: its interval would have to fall below 1";
  EXPECT_GE(r.covered, 2000 * 93 / 100);
}

// A resampled run's rounds are its own log ratios less their mean: from
// 0.1 and 0.3, every draw is -0.1 or 0.1.
TEST(StatisticsTest, ResampledNoiseDrawsTheRunsOwnRoundsCentred) {
  std::mt19937_64 rng(1);
  const RoundNoise noise = ResampledNoise({0.1, 0.3});
  for (int i = 0; i < 100; ++i) {
    const double x = noise(rng);
    EXPECT_TRUE(std::abs(x - 0.1) < 1e-12 || std::abs(x + 0.1) < 1e-12) << x;
  }
}

}  // namespace
}  // namespace backendlab
