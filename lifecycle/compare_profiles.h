// compare's rows run once more, with the sampler: what a page of the run
// (`compare --html`) shows beside its table — the baseline's flame graph,
// each other configuration's differential flame graph against it, and the
// baseline's first backends on a timeline. The rounds are over when this
// runs: nothing here touches the table's figures, and a profiled run carries
// no interval (one run each; the rounds' paired ratios say whether the whole
// changed).
#ifndef BACKENDLAB_LIFECYCLE_COMPARE_PROFILES_H_
#define BACKENDLAB_LIFECYCLE_COMPARE_PROFILES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lifecycle/compare.h"
#include "lifecycle/profile_run.h"
#include "profiling/exports.h"
#include "profiling/folded_diff.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle {

struct CompareProfileOptions {
  profiling::SamplerOptions sampler;
  int64_t connections = 1000;      // measured per configuration; the warm-up is the matrix's
  int64_t trace_connections = 200; // the baseline's first measured backends, as spans
  std::function<void(const std::string&)> progress;
};

struct CompareProfile {
  const CompareConfig* config = nullptr;  // in the matrix
  ProfileRun run;
  std::optional<profiling::FoldedDiff> diff;  // against the baseline's profile (ProfileDiff); none for the baseline
};

struct CompareProfiles {
  uint64_t shared_buffers_bytes = 0;  // where they ran
  std::vector<CompareProfile> rows;   // the baseline first, then the matrix's order
  std::vector<profiling::TraceSpan> baseline_spans;  // SpansOf the baseline's first backends
  bool interrupted = false;           // a stop request: the rows so far, none after
  // Configurations left out because their mode cannot be sampled
  // (SampledMode), by label.
  std::vector<std::string> not_profiled;
};

// Every configuration of the matrix at its largest shared_buffers, first
// clients and first hold (the A/A copy left out: it is the baseline's
// configuration), each one run of `options.connections` with the sampler,
// the baseline first. Errors: RunProfile's; NotFound if the matrix has no
// baseline there.
absl::StatusOr<CompareProfiles> ProfileCompareRows(const CompareMatrix& matrix, const CompareProfileOptions& options);

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_COMPARE_PROFILES_H_
