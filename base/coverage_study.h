// The coverage study: simulated runs of paired rounds, each stopped as a
// run of `compare` or `pg` stops (at the first of its looks where the ratio
// is decided, else at its last), to count how often the interval at the
// stop holds the true ratio and how often each verdict is given. It checks
// base/statistics.h's promise — every interval, read at one look's level
// (PerLookConfidence), covers with kConfidence whenever the run stopped —
// under a given noise of a round's log ratio: normal, heavy-tailed, or the
// rounds of a real run resampled. The rounds are drawn independently: a
// drift that lasts several rounds, which pairing within a round does not
// cancel, is not in it (the A/A runs of tools/aa-study are the check of
// that). `backendlab coverage-study` and the test of base/statistics call
// StudyCoverage.
#ifndef BACKENDLAB_BASE_COVERAGE_STUDY_H_
#define BACKENDLAB_BASE_COVERAGE_STUDY_H_

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "base/statistics.h"

namespace backendlab {

// A round's log ratio minus the true one: mean 0.
using RoundNoise = std::function<double(std::mt19937_64&)>;

// Normal with this standard deviation.
RoundNoise NormalNoise(double sd);
// Student's t with `df` > 2 degrees of freedom, scaled to standard deviation
// `sd`: tails far heavier than the normal's (df 3: an infinite kurtosis).
RoundNoise StudentNoise(double df, double sd);
// Drawn with replacement from `log_ratios` (a real run's paired log ratios,
// at least 2), centred on their mean: the run's own spread and tails.
RoundNoise ResampledNoise(std::vector<double> log_ratios);

struct CoverageStudyOptions {
  int64_t max_rounds = 1000;  // the looks: LookRounds(max_rounds)
  double same_within = 0.02;
  double true_ratio = 1;      // A over B; below 1 is faster (a cost)
  int runs = 2000;
  uint64_t seed = 1;
  RoundNoise noise = NormalNoise(0.05);
};

struct CoverageStudyResult {
  int runs = 0;
  double confidence_per_look = 0;  // the level every interval was read at
  int covered = 0;                 // runs whose interval at the stop held the true ratio
  int faster = 0, slower = 0, same = 0, undecided = 0;  // the verdicts at the stop
  double mean_rounds = 0;          // rounds at the stop, over the runs
  // The same rounds read at kConfidence at every look, stopped the same
  // way: the optional stopping the per-look level corrects.
  int covered_naive = 0;
  int apart_naive = 0;             // faster or slower
  int same_naive = 0;
};

// Runs the study; options.runs >= 1, max_rounds >= 2, same_within >= 0.
CoverageStudyResult StudyCoverage(const CoverageStudyOptions& options);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_COVERAGE_STUDY_H_
