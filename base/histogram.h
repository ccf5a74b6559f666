// A log-linear histogram of non-negative integers (HDR-style): exact count,
// min, max and sum, quantiles within 1 % of the true value, and a size that
// depends on the largest value recorded, never on how many were recorded. What
// a connect/disconnect loop keeps per phase, so that a run of 10^6
// connections or of hours holds as little as one of 100.
#ifndef BACKENDLAB_BASE_HISTOGRAM_H_
#define BACKENDLAB_BASE_HISTOGRAM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/summary.h"

namespace backendlab {

class Histogram {
 public:
  // Values below 2^kSubBucketBits each have a bucket of their own (exact);
  // above, every power of two is cut into 2^(kSubBucketBits-1) buckets of
  // equal width, so a bucket is at most 1/64 of its lower bound wide and its
  // midpoint within 0.8 % of any value in it.
  static constexpr int kSubBucketBits = 7;
  static constexpr double kMaxRelativeError = 0.01;
  // Buckets for every int64 value: the size bound, ~30 kB. A histogram of
  // nanoseconds up to a second uses ~1,500 of them (12 kB), of page-fault
  // counts below 128 at most 128.
  static constexpr int kMaxBuckets = (64 - kSubBucketBits + 1) * (1 << (kSubBucketBits - 1)) + (1 << (kSubBucketBits - 1));

  // Negative values are recorded as 0 in the buckets (min and sum keep them):
  // the figures recorded here are durations and counts.
  void Record(int64_t value);
  void Merge(const Histogram& other);

  int64_t count() const { return count_; }
  int64_t min() const { return count_ > 0 ? min_ : 0; }
  int64_t max() const { return count_ > 0 ? max_ : 0; }
  int64_t sum() const { return sum_; }
  // sum / count, exact (not from the buckets); 0 when empty.
  double mean() const { return count_ > 0 ? static_cast<double>(sum_) / static_cast<double>(count_) : 0; }
  size_t buckets_used() const { return buckets_.size(); }

  // The value at quantile q (0..1), interpolated between the closest ranks as
  // Summarize() does on the raw values; within kMaxRelativeError of what
  // Summarize() gives on them. 0 when empty.
  double Quantile(double q) const;

  // count, min, p10, median, p90, p99, max, each multiplied by `scale`
  // (e.g. 1e-3 for ns -> us); count 0 when empty.
  Summary Summarize(double scale = 1) const;

 private:
  static int BucketOf(uint64_t value);
  // The value a bucket stands for: itself below 2^kSubBucketBits, its
  // midpoint above.
  static double BucketValue(int bucket);
  // The value of rank r (0-based, in recording order sorted), approximated.
  double ValueAtRank(int64_t rank) const;

  std::vector<uint64_t> buckets_;  // grown up to the largest bucket used
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  int64_t sum_ = 0;
};

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_HISTOGRAM_H_
