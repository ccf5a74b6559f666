// What a run keeps of its backends: per phase and per connection figures as
// histograms (base/histogram.h), exact counts, and the first few backends
// worth naming. Its size does not depend on the number of connections.
#ifndef BACKENDLAB_LIFECYCLE_CYCLE_STATS_H_
#define BACKENDLAB_LIFECYCLE_CYCLE_STATS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "base/histogram.h"
#include "lifecycle/backend_record.h"

namespace backendlab::lifecycle {

struct PhaseHistograms {
  Histogram wall_ns;
  Histogram cpu_ns;
  Histogram minor_faults;
  Histogram major_faults;
  Histogram syscalls;  // only backends whose syscalls were counted
  std::array<Histogram, kNumPerfEvents> events;  // by PerfEvent; only where counted
};

// The backends kept whole: crashed and failed ones and ones whose exit
// check found a leak, the first kMaxIncidents of them (warm-up ones
// included); the rest are counted.
inline constexpr size_t kMaxIncidents = 16;

struct CycleStats {
  std::array<PhaseHistograms, kNumPhases> phases;  // over the backends that completed the phase
  Histogram wait_ns;      // ready -> terminate, exited measured backends
  Histogram lifetime_ns;  // accept -> reaped, exited measured backends
  int64_t exited = 0;     // measured backends
  int64_t crashed = 0;    // measured backends
  int64_t failed = 0;     // measured backends that ended on an error they printed (BackendOutcome::kFailed)
  int64_t stopped = 0;    // measured backends killed by a stop signal (BackendOutcome::kStopped)
  int64_t leaks = 0;      // leaks the exit check reported, measured backends
  int64_t warmup_crashed = 0;  // warm-up backends: no figure, still a failure
  int64_t warmup_failed = 0;
  std::vector<BackendRecord> incidents;
  int64_t incidents_dropped = 0;

  // A measured backend's record: into every figure.
  void AddMeasured(const BackendRecord& record);
  // A warm-up backend's record: kept only if it crashed or failed.
  void AddWarmup(const BackendRecord& record);
  void Merge(const CycleStats& other);

 private:
  void KeepIncident(const BackendRecord& record);
};

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_CYCLE_STATS_H_
