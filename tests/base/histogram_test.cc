// Histogram: quantiles against an exact sort of the same values, exact
// count/min/max/sum, merging, and a size bounded whatever the count.
#include "base/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "base/summary.h"
#include "gtest/gtest.h"

namespace backendlab {
namespace {

void ExpectWithin(double approx, double exact, const char* what) {
  EXPECT_LE(std::abs(approx - exact), Histogram::kMaxRelativeError * std::abs(exact) + 1e-9)
      << what << ": " << approx << " vs exact " << exact;
}

// Quantiles of `values` through a histogram, against Summarize() on them.
void CheckAgainstExactSort(const std::vector<int64_t>& values) {
  Histogram h;
  std::vector<double> exact;
  int64_t sum = 0;
  for (int64_t v : values) {
    h.Record(v);
    exact.push_back(static_cast<double>(v));
    sum += v;
  }
  const Summary want = Summarize(exact);
  const Summary got = h.Summarize();
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(h.sum(), sum);
  ExpectWithin(got.p10, want.p10, "p10");
  ExpectWithin(got.median, want.median, "median");
  ExpectWithin(got.p90, want.p90, "p90");
  ExpectWithin(got.p99, want.p99, "p99");
  for (double q : {0.0, 0.01, 0.25, 0.333, 0.75, 0.999, 1.0}) {
    const double rank = q * static_cast<double>(exact.size() - 1);
    std::vector<double> sorted = exact;
    std::sort(sorted.begin(), sorted.end());
    const auto lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double want_q = sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
    ExpectWithin(h.Quantile(q), want_q, "quantile");
  }
}

TEST(HistogramTest, QuantilesAreWithinOnePercentOfAnExactSortOnRandomData) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE(trial);
    std::vector<int64_t> values;
    const int n = 1 + static_cast<int>(rng() % 5000);
    // Log-uniform from 1 ns to ~17 minutes, as phase times spread; and
    // small integers, as fault counts are.
    std::uniform_real_distribution<double> exponent(0, 40);
    std::uniform_int_distribution<int64_t> small(0, 200);
    for (int i = 0; i < n; ++i) {
      values.push_back(trial % 2 == 0 ? static_cast<int64_t>(std::exp2(exponent(rng))) : small(rng));
    }
    CheckAgainstExactSort(values);
  }
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (int64_t v = 0; v < 128; ++v) h.Record(v);
  EXPECT_EQ(h.Quantile(0.5), 63.5);
  EXPECT_EQ(h.Quantile(0), 0);
  EXPECT_EQ(h.Quantile(1), 127);
  EXPECT_EQ(h.count(), 128);
  EXPECT_EQ(h.sum(), 127 * 128 / 2);
}

TEST(HistogramTest, EmptyGivesZeros) {
  const Histogram h;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.Quantile(0.5), 0);
  const Summary s = h.Summarize();
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.median, 0);
}

TEST(HistogramTest, MeanIsExactAndZeroWhenEmpty) {
  Histogram h;
  EXPECT_EQ(h.mean(), 0);
  for (int64_t v : {1, 2, 1000003}) h.Record(v);
  EXPECT_DOUBLE_EQ(h.mean(), 1000006.0 / 3);
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(7);
  Histogram a, b, all;
  for (int i = 0; i < 3000; ++i) {
    const auto v = static_cast<int64_t>(rng() % 10'000'000);
    (i % 3 == 0 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_EQ(a.sum(), all.sum());
  for (double q : {0.1, 0.5, 0.9, 0.99}) EXPECT_EQ(a.Quantile(q), all.Quantile(q)) << q;
}

TEST(HistogramTest, SizeIsBoundedWhateverTheCount) {
  Histogram h;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1'000'000; ++i) h.Record(static_cast<int64_t>(rng() % 1'000'000'000));
  const size_t after_a_million = h.buckets_used();
  for (int i = 0; i < 1'000'000; ++i) h.Record(static_cast<int64_t>(rng() % 1'000'000'000));
  EXPECT_EQ(h.buckets_used(), after_a_million) << "a second million values in the same range add no bucket";
  h.Record(INT64_MAX / 2);  // (not INT64_MAX: the exact sum would overflow)
  EXPECT_LE(h.buckets_used(), static_cast<size_t>(Histogram::kMaxBuckets));
  EXPECT_EQ(h.max(), INT64_MAX / 2);
  EXPECT_EQ(h.count(), 2'000'001);
}

TEST(HistogramTest, NegativeValuesKeepTheirExactMinAndSum) {
  Histogram h;
  h.Record(-5);
  h.Record(10);
  EXPECT_EQ(h.min(), -5);
  EXPECT_EQ(h.sum(), 5);
  EXPECT_EQ(h.Quantile(0), -5);
}

}  // namespace
}  // namespace backendlab
