// Log-linear buckets: exact below 128, 64 per power of two above.
#include "base/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace backendlab {
namespace {

constexpr uint64_t kSubBuckets = uint64_t{1} << Histogram::kSubBucketBits;  // 128
constexpr uint64_t kHalf = kSubBuckets / 2;                                  // 64

}  // namespace

int Histogram::BucketOf(uint64_t value) {
  if (value < kSubBuckets) return static_cast<int>(value);
  // The top kSubBucketBits bits of the value: its mantissa in [64, 128).
  const int shift = std::bit_width(value) - kSubBucketBits;
  return static_cast<int>(static_cast<uint64_t>(shift) * kHalf + (value >> shift));
}

double Histogram::BucketValue(int bucket) {
  const auto b = static_cast<uint64_t>(bucket);
  if (b < kSubBuckets) return static_cast<double>(b);
  const uint64_t shift = b / kHalf - 1;
  const uint64_t mantissa = b - shift * kHalf;  // in [64, 128)
  const double low = std::ldexp(static_cast<double>(mantissa), static_cast<int>(shift));
  return low + std::ldexp(0.5, static_cast<int>(shift)) - 0.5;  // the middle of [low, low + 2^shift - 1]
}

void Histogram::Record(int64_t value) {
  const int b = BucketOf(value < 0 ? 0 : static_cast<uint64_t>(value));
  if (static_cast<size_t>(b) >= buckets_.size()) buckets_.resize(static_cast<size_t>(b) + 1, 0);
  ++buckets_[static_cast<size_t>(b)];
  if (count_ == 0 || value < min_) min_ = value;
  if (count_ == 0 || value > max_) max_ = value;
  ++count_;
  sum_ += value;
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  if (other.buckets_.size() > buckets_.size()) buckets_.resize(other.buckets_.size(), 0);
  for (size_t i = 0; i < other.buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

double Histogram::ValueAtRank(int64_t rank) const {
  // The extremes are known exactly.
  if (rank <= 0) return static_cast<double>(min_);
  if (rank >= count_ - 1) return static_cast<double>(max_);
  uint64_t seen = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen > static_cast<uint64_t>(rank)) {
      return std::clamp(BucketValue(static_cast<int>(b)), static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

double Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(count_ - 1);
  const auto lo = static_cast<int64_t>(std::floor(rank));
  const double lo_value = ValueAtRank(lo);
  if (static_cast<double>(lo) == rank) return lo_value;
  const double hi_value = ValueAtRank(lo + 1);
  return lo_value + (hi_value - lo_value) * (rank - static_cast<double>(lo));
}

Summary Histogram::Summarize(double scale) const {
  Summary s;
  if (count_ == 0) return s;
  s.count = static_cast<int>(std::min<int64_t>(count_, INT32_MAX));
  s.min = static_cast<double>(min_) * scale;
  s.max = static_cast<double>(max_) * scale;
  s.p10 = Quantile(0.10) * scale;
  s.median = Quantile(0.50) * scale;
  s.p90 = Quantile(0.90) * scale;
  s.p99 = Quantile(0.99) * scale;
  return s;
}

}  // namespace backendlab
