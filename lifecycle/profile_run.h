// One profiled run, as `backendlab profile` reports it: the cycle with the
// sampler on, its samples folded into views (all, phases, each phase), and
// per phase the share of the samples beside the share of the sampled clock
// that the phase counters measured, so that a reader can see whether the two
// agree. Every figure is derived here, once; a caller only prints.
#ifndef BACKENDLAB_LIFECYCLE_PROFILE_RUN_H_
#define BACKENDLAB_LIFECYCLE_PROFILE_RUN_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "lifecycle/cycle.h"
#include "lifecycle/cycle_summary.h"
#include "profiling/folded_diff.h"
#include "profiling/profile_views.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle {

// One tag's line: a backend phase (the Phase values), then kSampleTagWait.
// Reap is the kernel's, after _exit: never sampled, and its counters are not
// on a user-space sampler's clock, so it has no counter time.
struct PhaseShare {
  int32_t tag = 0;
  int64_t samples = 0;                    // samples taken with this tag
  std::optional<double> samples_percent;  // of the samples with a phase or wait tag; none if there were none
  // The time the phase counters measured on the sampled clock (CPU time, or
  // wall time, where the backends' wait for "terminate" counts too); none:
  // not measured on that clock.
  std::optional<double> counter_ms;
  std::optional<double> counter_percent;  // of all the phases' counter time; none if that is 0
};

struct ProfileRun {
  CycleResult cycle;
  CycleSummary summary;
  int64_t processes = 0;            // distinct processes that were sampled
  int64_t phase_samples = 0;        // samples with a phase or wait tag
  double backend_cpu_seconds = 0;   // the phase counters' CPU time of the backends (reap left out)
  double samples_per_cpu_second = 0;  // phase_samples / backend_cpu_seconds; 0 without CPU time
  std::vector<PhaseShare> phases;   // the phases, then wait, on the sampled clock
  // Folded views of every sample; processes named "postmaster", "backend"
  // and, in inproc mode, "client" (perf's comm names), phases by
  // SampleTagName(); `views.measured` holds the backends' stacks.
  profiling::ProfileViews views;
};

// Runs the cycle of `options` (whose sampler must be set) and derives the
// figures above. A cycle that fails returns its error; an interrupted one a
// result with cycle.interrupted set, as RunCycle does.
absl::StatusOr<ProfileRun> RunProfile(const CycleOptions& options);

// `run` (named `name`) against `base` (named `base_name`), both profiled with
// `sampler`: every sample of the backends and the postmaster (the "all"
// view) in microseconds of the sampled clock per measured connection, a
// sample being 1/frequency s of it, so that runs of different lengths
// compare.
profiling::FoldedDiff ProfileDiff(const ProfileRun& base, std::string base_name, const ProfileRun& run,
                                  std::string name, const profiling::SamplerOptions& sampler);

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_PROFILE_RUN_H_
