// The uncertainty of repeated measurements: paired ratios over interleaved
// rounds, 95 % intervals and a verdict, computed once, before any reporter
// runs (as Google Benchmark's statistics.cc and perf's util/stat.c are).
//
// Why a t interval on log ratios, not a bootstrap: a comparison has a few
// to a few dozen rounds. Each round's ratio is A's figure over B's, measured
// back to back in that round, so drift common to both cancels; its log is a
// difference of two logs of means over many connections, close to normal by
// the central limit theorem, and for normal data Student's t interval has
// exactly the coverage it states at any number of rounds. A percentile
// bootstrap over n rounds is too narrow by about sqrt((n-1)/n) and moves in
// steps at n < 20, so it would claim more than a short run knows. The
// interval of a ratio is exp(mean ± t · sd / sqrt(n)) of the log ratios; its
// point is their geometric mean, which is symmetric: A/B's is 1 / B/A's.
#ifndef BACKENDLAB_BASE_STATISTICS_H_
#define BACKENDLAB_BASE_STATISTICS_H_

#include <optional>
#include <span>
#include <string_view>

#include "base/names.h"

namespace backendlab {

// 95 %: the confidence of every interval backendlab prints.
inline constexpr double kConfidence = 0.95;

// The (1 + confidence) / 2 quantile of Student's t with `df` degrees of
// freedom (df >= 1), found by bisection on its distribution function,
// integrated numerically: 12.706 at df 1, 2.228 at 10, 1.960 in the limit.
double StudentTQuantile(int df, double confidence = kConfidence);

struct Interval {
  double low = 0;
  double high = 0;
  bool Covers(double x) const { return low <= x && x <= high; }
  // Half the width, relative to `point`: the precision a run reached.
  double RelativeHalfWidth(double point) const { return point != 0 ? (high - low) / 2 / point : 0; }
};

// What a comparison says: its interval lies below 1, above 1, or covers 1.
// Which of below and above is `faster` depends on what the ratio is of.
enum class Verdict { kFaster, kSlower, kSame };
inline constexpr NamedValue<Verdict> kVerdictNames[] = {
    {Verdict::kFaster, "faster"}, {Verdict::kSlower, "slower"}, {Verdict::kSame, "~"}};
inline std::string_view VerdictName(Verdict v) { return NameOf(v, kVerdictNames); }

// Whether a larger figure is better (a rate: conn/s) or worse (a cost: CPU
// per connection, microseconds): what turns an interval into a verdict.
enum class Better { kHigher, kLower };

struct RatioEstimate {
  int rounds = 0;          // paired rounds it is over
  double ratio = 0;        // geometric mean of the rounds' ratios
  Interval interval;       // 95 %; set only with rounds >= 2
  bool has_interval = false;
  Verdict verdict = Verdict::kSame;  // kSame also when there is no interval
  bool self = false;       // SelfRatio: a baseline against itself
};

// The ratio A/B of two configurations measured in the same rounds: a[i] and
// b[i] are round i's figures. Rounds where either is not positive are left
// out (a configuration that served nothing in a round has no ratio there).
// `better` says which way is faster for A. Fewer than 2 usable rounds: no
// interval, verdict `~`. `confidence`: the interval's, kConfidence unless a
// family of comparisons is held to it together (Bonferroni: each at
// 1 - (1 - kConfidence) / k of k).
RatioEstimate PairedRatio(std::span<const double> a, std::span<const double> b, Better better,
                          double confidence = kConfidence);

// PairedRatio over the rounds both have (a run stopped early may leave one
// configuration a round ahead); none where no round has both figures.
std::optional<RatioEstimate> PairedRatioOfCommonRounds(std::span<const double> a, std::span<const double> b,
                                                       Better better, double confidence = kConfidence);

// A baseline against itself over `rounds` rounds: exactly 1, no interval
// (there is no spread to give one), verdict `~`.
inline RatioEstimate SelfRatio(int rounds) {
  RatioEstimate r;
  r.rounds = rounds;
  r.ratio = 1.0;
  r.self = true;
  return r;
}

// The verdict an interval gives: `~` where it covers 1.
Verdict VerdictOf(const Interval& interval, Better better);

struct MedianEstimate {
  int count = 0;
  double median = 0;
  // A distribution-free 95 % interval: the order statistics j and k whose
  // span holds the true median with probability >= 95 % (binomial with p =
  // 1/2, the narrowest symmetric pair). Unset below 6 values, where even
  // [min, max] holds it with less than 95 %.
  std::optional<Interval> interval;
};

MedianEstimate MedianWithInterval(std::span<const double> values);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_STATISTICS_H_
