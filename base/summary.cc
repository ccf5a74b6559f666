// Percentile summaries.
#include "base/summary.h"

#include <algorithm>
#include <cmath>

namespace backendlab {
namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace

Summary Summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.p10 = Percentile(samples, 0.10);
  s.median = Percentile(samples, 0.50);
  s.p90 = Percentile(samples, 0.90);
  s.p99 = Percentile(samples, 0.99);
  return s;
}

}  // namespace backendlab
