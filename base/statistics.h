// The uncertainty of repeated measurements: paired ratios over interleaved
// rounds, 95 % intervals and a verdict, computed once, before any reporter
// runs (as Google Benchmark's statistics.cc and perf's util/stat.c are).
//
// Why a t interval on log ratios, not a bootstrap: a comparison has a few
// to a few hundred rounds. Each round's ratio is A's figure over B's,
// measured back to back in that round, so drift common to both cancels; its
// log is a difference of two logs of means over many connections, close to
// normal by the central limit theorem, and for normal data at a number of
// rounds fixed beforehand Student's t interval has the coverage it states.
// A percentile bootstrap over n rounds is too narrow by about
// sqrt((n-1)/n) and moves in steps at n < 20, so it would claim more than a
// short run knows. The interval of a ratio is exp(mean ± t · sd / sqrt(n))
// of the log ratios; its point is their geometric mean, which is
// symmetric: A/B's is 1 / B/A's.
//
// A run that stops when its ratios are decided chooses its number of rounds
// from the data: read at a fixed-n level, an interval would then cover less
// than it states (each look is another chance to miss). Such a run looks
// only at fixed rounds (LookRounds) and reads every interval at the level
// of one look (PerLookConfidence) that keeps the chance that *any* look's
// interval misses the true ratio within 5 %: a group-sequential boundary,
// the same at every look (a design of the kind Lan & DeMets, Biometrika
// 1983, generalise), found by simulating the looks. Whatever round a ratio
// stops at, its interval then covers the true ratio with 95 %.
#ifndef BACKENDLAB_BASE_STATISTICS_H_
#define BACKENDLAB_BASE_STATISTICS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/names.h"

namespace backendlab {

// 95 %: the confidence of every interval backendlab prints.
inline constexpr double kConfidence = 0.95;

// The (1 + confidence) / 2 quantile of Student's t with `df` degrees of
// freedom (df >= 1), from Boost.Math: 12.706 at df 1, 2.228 at 10, 1.960 in
// the limit.
double StudentTQuantile(int df, double confidence = kConfidence);

// The (1 + confidence) / 2 quantile of the standard normal (Boost.Math).
double NormalQuantile(double confidence = kConfidence);

struct Interval {
  double low = 0;
  double high = 0;
  bool Covers(double x) const { return low <= x && x <= high; }
  // Half the width, relative to `point`: the precision a run reached.
  double RelativeHalfWidth(double point) const { return point != 0 ? (high - low) / 2 / point : 0; }
};

// What a comparison says. `same`: its whole interval lies within ±δ of 1
// (RatioRule::same_within), so any difference is smaller than δ — the
// equivalence of two one-sided tests (Schuirmann 1987), each at 2.5 %
// here, since the interval is a 95 % one. Else `faster` or `slower`: the
// interval lies below or above 1 (which of them is `faster` depends on what
// the ratio is of). Else `~`: the interval covers 1 and reaches past ±δ,
// this run cannot tell. With a true ratio of 1, `faster` and `slower` err
// at most 2.5 % each; with one beyond ±δ, `same` errs at most 2.5 %.
enum class Verdict { kFaster, kSlower, kSame, kUndecided };
inline constexpr NamedValue<Verdict> kVerdictNames[] = {
    {Verdict::kFaster, "faster"}, {Verdict::kSlower, "slower"}, {Verdict::kSame, "same"}, {Verdict::kUndecided, "~"}};
inline std::string_view VerdictName(Verdict v) { return NameOf(v, kVerdictNames); }

// Whether a larger figure is better (a rate: conn/s) or worse (a cost: CPU
// per connection, microseconds): what turns an interval into a verdict.
enum class Better { kHigher, kLower };

// How a run reads its ratios: the level of each interval, and the band
// within which a ratio is `same`.
struct RatioRule {
  double confidence = kConfidence;  // each interval's; a sequential run's is PerLookConfidence
  double same_within = 0;           // δ, relative (0.02: ±2 %); 0: no ratio is `same`
};

struct RatioEstimate {
  int rounds = 0;          // paired rounds it is over
  double ratio = 0;        // geometric mean of the rounds' ratios
  Interval interval;       // at the rule's confidence; set only with rounds >= 2
  bool has_interval = false;
  Verdict verdict = Verdict::kUndecided;  // also when there is no interval
  bool self = false;       // SelfRatio: a baseline against itself
  // For `~`: the rounds at which an interval of this point and spread
  // would be decided (narrower than the point's distance from 1, or than its
  // distance from ±δ), a guess that holds while the point and spread hold;
  // 0 when decided or without an interval, -1 when no count would do (a
  // point of 1 with no `same` band) or it would take over a million.
  int64_t rounds_to_decide = 0;
};

// A ratio a run left `~`, and what would decide it (rounds_to_decide).
struct UndecidedRatio {
  std::string row;     // the row's name in messages
  std::string figure;  // its column's key: server_cpu_us_vs_baseline, ...
  RatioEstimate estimate;
};

// Whether a ratio is decided: `faster`, `slower` or `same`.
inline bool Decided(const RatioEstimate& r) { return r.self || r.verdict != Verdict::kUndecided; }

// The ratio A/B of two configurations measured in the same rounds: a[i] and
// b[i] are round i's figures. Rounds where either is not positive are left
// out (a configuration that served nothing in a round has no ratio there).
// `better` says which way is faster for A. Fewer than 2 usable rounds: no
// interval, verdict `~`. `rule`: the interval's confidence (kConfidence
// unless the run took looks, or a family of comparisons is held to it
// together: Bonferroni, each at 1 - (1 - kConfidence) / k of k) and the
// `same` band.
RatioEstimate PairedRatio(std::span<const double> a, std::span<const double> b, Better better,
                          const RatioRule& rule = {});

// PairedRatio over the rounds both have (a configuration that left the
// rounds sooner, or a run stopped early, leaves the other with more); none
// where no round has both figures.
std::optional<RatioEstimate> PairedRatioOfCommonRounds(std::span<const double> a, std::span<const double> b,
                                                       Better better, const RatioRule& rule = {});

// A baseline against itself over `rounds` rounds: exactly 1, no interval
// (there is no spread to give one), verdict `~`.
inline RatioEstimate SelfRatio(int rounds) {
  RatioEstimate r;
  r.rounds = rounds;
  r.ratio = 1.0;
  r.self = true;
  return r;
}

// The verdict an interval gives under a `same` band of ±same_within (0:
// none): `same` inside it, else `faster` or `slower` where it excludes 1,
// else `~`. The band is symmetric in logs, [1/(1+δ), 1+δ], so that A/B and
// B/A get the same verdict.
Verdict VerdictOf(const Interval& interval, Better better, double same_within = 0);

// The rounds after which a run that may stop on its verdicts looks at them:
// kMinLookRounds, then each look twice the rounds of the one before, and
// the last at `max_rounds` (none below kMinLookRounds: every round runs).
inline constexpr int64_t kMinLookRounds = 6;
std::vector<int64_t> LookRounds(int64_t max_rounds);

// The confidence each look's interval is read at so that, over looks after
// `looks` rounds, the chance that any of them misses the true ratio is at
// most 1 - `confidence`: c such that P(max over the looks of |Z_k| > c) =
// 1 - confidence for the z statistics of normal rounds at those counts
// (Z_k = S(n_k) / sqrt(n_k), S a sum of independent standard normals),
// found from 200,000 simulated runs (seeded: every call gives the same),
// as 2 Φ(c) - 1. A look taken before its planned round, as the last one
// when time runs out, only lowers that chance. One look: `confidence`.
double PerLookConfidence(std::span<const int64_t> looks, double confidence = kConfidence);

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
