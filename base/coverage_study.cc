// Simulated runs stopped on their verdicts.
#include "base/coverage_study.h"

#include <cmath>
#include <numeric>
#include <utility>

namespace backendlab {

RoundNoise NormalNoise(double sd) {
  return [sd](std::mt19937_64& rng) { return std::normal_distribution<double>(0, sd)(rng); };
}

RoundNoise StudentNoise(double df, double sd) {
  // t(df) has variance df / (df - 2).
  const double scale = sd / std::sqrt(df / (df - 2));
  return [df, scale](std::mt19937_64& rng) { return scale * std::student_t_distribution<double>(df)(rng); };
}

RoundNoise ResampledNoise(std::vector<double> log_ratios) {
  const double mean = std::accumulate(log_ratios.begin(), log_ratios.end(), 0.0) / static_cast<double>(log_ratios.size());
  for (double& x : log_ratios) x -= mean;
  return [values = std::move(log_ratios)](std::mt19937_64& rng) {
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
  };
}

namespace {

// One reading of a run's rounds: stopped at the first decided look.
RatioEstimate StopOnVerdict(std::span<const double> a, std::span<const double> b, std::span<const int64_t> looks,
                            const RatioRule& rule) {
  RatioEstimate r;
  for (const int64_t look : looks) {
    const size_t n = static_cast<size_t>(look);
    r = PairedRatio(a.first(n), b.first(n), Better::kLower, rule);
    if (Decided(r)) break;
  }
  return r;
}

}  // namespace

CoverageStudyResult StudyCoverage(const CoverageStudyOptions& options) {
  const std::vector<int64_t> looks = LookRounds(options.max_rounds);
  const RatioRule rule{PerLookConfidence(looks), options.same_within};
  const RatioRule naive{kConfidence, options.same_within};
  CoverageStudyResult result;
  result.runs = options.runs;
  result.confidence_per_look = rule.confidence;
  std::mt19937_64 rng(options.seed);
  const size_t n = static_cast<size_t>(looks.back());
  std::vector<double> a(n), b(n, 1.0);
  const double log_true = std::log(options.true_ratio);
  double rounds = 0;
  for (int run = 0; run < options.runs; ++run) {
    for (double& x : a) x = std::exp(log_true + options.noise(rng));
    const RatioEstimate r = StopOnVerdict(a, b, looks, rule);
    result.covered += r.has_interval && r.interval.Covers(options.true_ratio);
    result.faster += r.verdict == Verdict::kFaster;
    result.slower += r.verdict == Verdict::kSlower;
    result.same += r.verdict == Verdict::kSame;
    result.undecided += r.verdict == Verdict::kUndecided;
    rounds += r.rounds;
    const RatioEstimate q = StopOnVerdict(a, b, looks, naive);
    result.covered_naive += q.has_interval && q.interval.Covers(options.true_ratio);
    result.apart_naive += q.verdict == Verdict::kFaster || q.verdict == Verdict::kSlower;
    result.same_naive += q.verdict == Verdict::kSame;
  }
  result.mean_rounds = rounds / options.runs;
  return result;
}

}  // namespace backendlab
