// Medians and spreads of a run's figures: what `cycle` and `compare` print.
#ifndef BACKENDLAB_LIFECYCLE_CYCLE_SUMMARY_H_
#define BACKENDLAB_LIFECYCLE_CYCLE_SUMMARY_H_

#include <array>

#include "absl/status/status.h"

#include "lifecycle/backend_record.h"
#include "base/summary.h"
#include "lifecycle/cycle.h"

namespace backendlab::lifecycle {

struct PhaseStats {
  Summary wall_us;  // over the backends that completed the phase
  double cpu_us = 0;           // medians, within Histogram::kMaxRelativeError
  double minor_faults = 0;
  double major_faults = 0;
  double syscalls = -1;        // -1: not counted
  std::array<double, kNumPerfEvents> events;  // medians by PerfEvent; -1: not counted
  PhaseStats() { events.fill(-1); }
};

struct CycleSummary {
  std::array<PhaseStats, kNumPhases> phases;
  Summary wait_us;        // ready -> terminate, inside the backend
  Summary lifetime_us;    // accept -> reaped
  Summary connect_us;     // client: connect -> ready
  Summary query_us;       // client: query sent -> answer received (with queries)
  double connections_per_second = 0;
  double baseline_forks_per_second = 0;  // 1 / median bare fork+exit+wait
  int64_t exited = 0, crashed = 0, failed = 0, leaks = 0;
};

CycleSummary Summarize(const CycleResult& result);

// Exit status of a finished run: OK, or an error naming what went wrong —
// interrupted (Cancelled: exit 130), backends crashed or failed (warm-up
// included; the first one named, so that the line says it all wherever the
// report went) or connections that never got "ready" (Aborted: exit 1).
absl::Status RunOutcome(const CycleResult& result, const CycleSummary& summary);

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_CYCLE_SUMMARY_H_
