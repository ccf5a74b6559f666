// Paired ratios, t and order-statistic intervals, verdicts.
#include "base/statistics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "boost/math/distributions/normal.hpp"
#include "boost/math/distributions/students_t.hpp"

#include "base/check.h"

namespace backendlab {

double StudentTQuantile(int df, double confidence) {
  BACKENDLAB_CHECK(df >= 1);
  BACKENDLAB_CHECK(confidence > 0 && confidence < 1);
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), (1 + confidence) / 2);
}

double NormalQuantile(double confidence) {
  BACKENDLAB_CHECK(confidence > 0 && confidence < 1);
  return boost::math::quantile(boost::math::normal_distribution<double>(), (1 + confidence) / 2);
}

Verdict VerdictOf(const Interval& interval, Better better, double same_within) {
  if (same_within > 0 && interval.low >= 1 / (1 + same_within) && interval.high <= 1 + same_within) {
    return Verdict::kSame;
  }
  if (interval.Covers(1)) return Verdict::kUndecided;
  const bool above = interval.low > 1;
  return above == (better == Better::kHigher) ? Verdict::kFaster : Verdict::kSlower;
}

RatioEstimate PairedRatio(std::span<const double> a, std::span<const double> b, Better better, const RatioRule& rule) {
  BACKENDLAB_CHECK(a.size() == b.size());
  std::vector<double> logs;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] > 0 && b[i] > 0 && std::isfinite(a[i]) && std::isfinite(b[i])) logs.push_back(std::log(a[i] / b[i]));
  }
  RatioEstimate r;
  r.rounds = static_cast<int>(logs.size());
  if (logs.empty()) return r;
  double mean = 0;
  for (double l : logs) mean += l;
  mean /= static_cast<double>(logs.size());
  r.ratio = std::exp(mean);
  if (logs.size() < 2) return r;
  double ss = 0;
  for (double l : logs) ss += (l - mean) * (l - mean);
  const double n = static_cast<double>(logs.size());
  const double q = StudentTQuantile(r.rounds - 1, rule.confidence);
  const double sd = std::sqrt(ss / (n - 1));
  const double half = q * sd / std::sqrt(n);
  r.interval = {std::exp(mean - half), std::exp(mean + half)};
  r.has_interval = true;
  r.verdict = VerdictOf(r.interval, better, rule.same_within);
  if (r.verdict == Verdict::kUndecided) {
    // The half-width that would decide it: below |mean| (excluding 1), or
    // below the band's edge less |mean| (inside ±δ), whichever is wider.
    const double band = rule.same_within > 0 ? std::log1p(rule.same_within) : 0;
    const double needed = std::max(std::abs(mean), band - std::abs(mean));
    if (needed <= 0) {
      r.rounds_to_decide = -1;
    } else {
      const double rounds = std::ceil(std::pow(q * sd / needed, 2));
      r.rounds_to_decide = rounds > 1e6 ? -1 : std::max(static_cast<int64_t>(rounds), static_cast<int64_t>(n) + 1);
    }
  }
  return r;
}

std::optional<RatioEstimate> PairedRatioOfCommonRounds(std::span<const double> a, std::span<const double> b,
                                                       Better better, const RatioRule& rule) {
  const size_t n = std::min(a.size(), b.size());
  const RatioEstimate r = PairedRatio(a.first(n), b.first(n), better, rule);
  if (r.rounds == 0) return std::nullopt;
  return r;
}

std::vector<int64_t> LookRounds(int64_t max_rounds) {
  std::vector<int64_t> looks;
  for (int64_t n = kMinLookRounds; n < max_rounds; n *= 2) looks.push_back(n);
  if (max_rounds >= kMinLookRounds) looks.push_back(max_rounds);
  return looks;
}

namespace {

// A standard normal draw by Box-Muller from two uniforms in (0, 1] of the
// generator's top 53 bits: the same sequence with every standard library.
// Two independent standard normals (Box-Muller, both halves).
std::pair<double, double> StandardNormals(std::mt19937_64& rng) {
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 1) * 0x1.0p-53; };
  const double r = std::sqrt(-2 * std::log(uniform())), angle = 2 * M_PI * uniform();
  return {r * std::cos(angle), r * std::sin(angle)};
}

double SimulatePerLookConfidence(std::span<const int64_t> looks, double confidence) {
  constexpr int kRuns = 200000;
  std::mt19937_64 rng(20261206);
  // Per look: the increment's sd, and 1 / sqrt of the rounds at it.
  std::vector<double> step, scale;
  for (size_t i = 0; i < looks.size(); ++i) {
    step.push_back(std::sqrt(static_cast<double>(looks[i] - (i == 0 ? 0 : looks[i - 1]))));
    scale.push_back(1 / std::sqrt(static_cast<double>(looks[i])));
  }
  std::vector<double> widest(kRuns);
  std::pair<double, double> normals;
  bool spare = false;
  for (double& w : widest) {
    double sum = 0, top = 0;
    for (size_t i = 0; i < looks.size(); ++i) {
      double z;
      if (spare) {
        z = normals.second;
      } else {
        normals = StandardNormals(rng);
        z = normals.first;
      }
      spare = !spare;
      sum += z * step[i];
      top = std::max(top, std::abs(sum) * scale[i]);
    }
    w = top;
  }
  const size_t k = std::min<size_t>(kRuns - 1, static_cast<size_t>(std::ceil(confidence * kRuns)) - 1);
  std::nth_element(widest.begin(), widest.begin() + static_cast<std::ptrdiff_t>(k), widest.end());
  const double c = widest[k];
  return std::erf(c / std::sqrt(2.0));  // 2 Φ(c) - 1
}

}  // namespace

double PerLookConfidence(std::span<const int64_t> looks, double confidence) {
  BACKENDLAB_CHECK(confidence > 0 && confidence < 1);
  if (looks.size() <= 1) return confidence;
  // A run asks for one or two levels, at every look: remembered.
  static std::mutex mutex;
  static std::map<std::pair<std::vector<int64_t>, double>, double> known;
  std::pair<std::vector<int64_t>, double> key{{looks.begin(), looks.end()}, confidence};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto found = known.find(key); found != known.end()) return found->second;
  }
  const double level = SimulatePerLookConfidence(looks, confidence);
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(std::move(key), level);
  return level;
}

MedianEstimate MedianWithInterval(std::span<const double> values) {
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  MedianEstimate m;
  m.count = static_cast<int>(sorted.size());
  if (sorted.empty()) return m;
  const size_t n = sorted.size();
  m.median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  // [X(j), X(n+1-j)] (1-based) misses the median when at most j-1 values
  // fall below it or at most j-1 above: probability 2 P(Bin(n, 1/2) <= j-1).
  // The largest j that keeps that within 5 %.
  const double dn = static_cast<double>(n);
  auto pmf = [&](size_t k) {  // P(Bin(n, 1/2) = k), in logs: 2^-n underflows past n ~ 1074
    const double dk = static_cast<double>(k);
    return std::exp(std::lgamma(dn + 1) - std::lgamma(dk + 1) - std::lgamma(dn - dk + 1) - dn * std::log(2.0));
  };
  double tail = pmf(0);  // P(Bin <= k)
  size_t j = 0;
  for (size_t k = 0; 2 * k + 1 < n && 2 * tail <= 1 - kConfidence; ++k) {
    j = k + 1;
    tail += pmf(k + 1);
  }
  if (j == 0) return m;
  m.interval = Interval{sorted[j - 1], sorted[n - j]};
  return m;
}

}  // namespace backendlab
