// Folding backend records into a run's bounded figures.
#include "lifecycle/cycle_stats.h"

namespace backendlab::lifecycle {

void CycleStats::KeepIncident(const BackendRecord& record) {
  if (incidents.size() < kMaxIncidents) {
    incidents.push_back(record);
  } else {
    ++incidents_dropped;
  }
}

void CycleStats::AddMeasured(const BackendRecord& r) {
  for (Phase p : kAllPhases) {
    if (!r.Done(p)) continue;
    const PhaseCounters& c = r.phase[static_cast<int>(p)];
    PhaseHistograms& h = phases[static_cast<int>(p)];
    h.wall_ns.Record(c.wall_ns);
    h.cpu_ns.Record(c.cpu_ns);
    h.minor_faults.Record(c.minor_faults);
    h.major_faults.Record(c.major_faults);
    if (c.syscalls >= 0) h.syscalls.Record(c.syscalls);
    for (int e = 0; e < kNumPerfEvents; ++e) {
      if (c.events[e] >= 0) h.events[static_cast<size_t>(e)].Record(c.events[e]);
    }
  }
  if (r.outcome == BackendOutcome::kExited) {
    ++exited;
    wait_ns.Record(r.WaitNs());
    lifetime_ns.Record(r.LifetimeNs());
  } else if (r.outcome == BackendOutcome::kStopped) {
    ++stopped;
  } else if (r.outcome == BackendOutcome::kFailed) {
    ++failed;
  } else {
    ++crashed;
  }
  leaks += r.leaks_found;
  if (r.outcome == BackendOutcome::kCrashed || r.outcome == BackendOutcome::kFailed || r.leaks_found > 0) KeepIncident(r);
}

void CycleStats::AddWarmup(const BackendRecord& r) {
  if (r.outcome == BackendOutcome::kCrashed) {
    ++warmup_crashed;
  } else if (r.outcome == BackendOutcome::kFailed) {
    ++warmup_failed;
  } else {
    return;
  }
  KeepIncident(r);
}

void CycleStats::Merge(const CycleStats& o) {
  for (int p = 0; p < kNumPhases; ++p) {
    PhaseHistograms& h = phases[static_cast<size_t>(p)];
    const PhaseHistograms& oh = o.phases[static_cast<size_t>(p)];
    h.wall_ns.Merge(oh.wall_ns);
    h.cpu_ns.Merge(oh.cpu_ns);
    h.minor_faults.Merge(oh.minor_faults);
    h.major_faults.Merge(oh.major_faults);
    h.syscalls.Merge(oh.syscalls);
    for (size_t e = 0; e < h.events.size(); ++e) h.events[e].Merge(oh.events[e]);
  }
  wait_ns.Merge(o.wait_ns);
  lifetime_ns.Merge(o.lifetime_ns);
  exited += o.exited;
  crashed += o.crashed;
  failed += o.failed;
  stopped += o.stopped;
  leaks += o.leaks;
  warmup_crashed += o.warmup_crashed;
  warmup_failed += o.warmup_failed;
  for (const BackendRecord& r : o.incidents) KeepIncident(r);
  incidents_dropped += o.incidents_dropped;
}

}  // namespace backendlab::lifecycle
