// Paired ratios, t and order-statistic intervals, verdicts.
#include "base/statistics.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <vector>

#include "base/check.h"

namespace backendlab {
namespace {

// Student's t density with `df` degrees of freedom, its constant factor
// precomputed (lgamma: Γ overflows a double past df ~ 340).
struct TDensity {
  explicit TDensity(int df)
      : nu(df), scale(std::exp(std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2)) / std::sqrt(nu * M_PI)) {}
  double operator()(double t) const { return scale * std::pow(1 + t * t / nu, -(nu + 1) / 2); }
  double nu;
  double scale;
};

// The integral of `f` over [a, b] by Simpson's rule: the density is smooth,
// so 64 panels per step keep the error far below what a quantile needs.
template <typename F>
double Simpson(const F& f, double a, double b) {
  constexpr int kPanels = 64;
  const double h = (b - a) / kPanels;
  double sum = f(a) + f(b);
  for (int i = 1; i < kPanels; ++i) sum += f(a + i * h) * (i % 2 == 1 ? 4 : 2);
  return sum * h / 3;
}

double ComputeTQuantile(int df, double confidence) {
  const double target = (1 + confidence) / 2 - 0.5;  // the mass wanted in [0, x]
  const TDensity f(df);
  // Newton's method on the distribution function, from the left: it is
  // concave for x > 0, so every step stays left of the root and the mass
  // integrated so far only grows (each step integrates just its own span).
  double x = 0, mass = 0;
  for (int i = 0; i < 1000; ++i) {
    const double step = (target - mass) / f(x);
    if (step < 1e-12 * std::max(1.0, x)) break;
    mass += Simpson(f, x, x + step);
    x += step;
  }
  return x;
}

}  // namespace

double StudentTQuantile(int df, double confidence) {
  BACKENDLAB_CHECK(df >= 1);
  BACKENDLAB_CHECK(confidence > 0 && confidence < 1);
  // Every comparison asks for the 95 % quantile of a few dozen df, each
  // round: remembered (0 = not yet; a race computes the same value twice).
  static std::array<std::atomic<double>, 512> cache{};
  if (confidence == kConfidence && static_cast<size_t>(df) < cache.size()) {
    double q = cache[static_cast<size_t>(df)].load(std::memory_order_relaxed);
    if (q == 0) {
      q = ComputeTQuantile(df, confidence);
      cache[static_cast<size_t>(df)].store(q, std::memory_order_relaxed);
    }
    return q;
  }
  return ComputeTQuantile(df, confidence);
}

Verdict VerdictOf(const Interval& interval, Better better) {
  if (interval.Covers(1)) return Verdict::kSame;
  const bool above = interval.low > 1;
  return above == (better == Better::kHigher) ? Verdict::kFaster : Verdict::kSlower;
}

RatioEstimate PairedRatio(std::span<const double> a, std::span<const double> b, Better better, double confidence) {
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
  const double half = StudentTQuantile(r.rounds - 1, confidence) * std::sqrt(ss / (n - 1)) / std::sqrt(n);
  r.interval = {std::exp(mean - half), std::exp(mean + half)};
  r.has_interval = true;
  r.verdict = VerdictOf(r.interval, better);
  return r;
}

std::optional<RatioEstimate> PairedRatioOfCommonRounds(std::span<const double> a, std::span<const double> b,
                                                       Better better, double confidence) {
  const size_t n = std::min(a.size(), b.size());
  const RatioEstimate r = PairedRatio(a.first(n), b.first(n), better, confidence);
  if (r.rounds == 0) return std::nullopt;
  return r;
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
