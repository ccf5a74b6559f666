// Medians and spreads of repeated measurements: what every report quotes.
#ifndef BACKENDLAB_BASE_SUMMARY_H_
#define BACKENDLAB_BASE_SUMMARY_H_

#include <utility>
#include <vector>

namespace backendlab {

struct Summary {
  int count = 0;
  double min = 0, p10 = 0, median = 0, p90 = 0, p99 = 0, max = 0;
};

// Percentiles by linear interpolation between closest ranks; an empty input
// gives a Summary with count 0.
Summary Summarize(std::vector<double> samples);

// The median of field(s) over `samples`: what a report's cells quote.
template <typename Sample, typename Field>
double MedianOf(const std::vector<Sample>& samples, Field field) {
  std::vector<double> values;
  values.reserve(samples.size());
  for (const Sample& s : samples) values.push_back(static_cast<double>(field(s)));
  return Summarize(std::move(values)).median;
}

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_SUMMARY_H_
