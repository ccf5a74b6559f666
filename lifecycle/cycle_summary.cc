// Summaries of cycle records.
#include "lifecycle/cycle_summary.h"

namespace backendlab::lifecycle {

CycleSummary Summarize(const CycleResult& result) {
  CycleSummary s;
  for (Phase p : kAllPhases) {
    std::vector<double> wall, cpu, minor, major, sys;
    std::array<std::vector<double>, kNumPerfEvents> events;
    for (const BackendRecord& r : result.records) {
      if (!r.Done(p)) continue;
      const PhaseCounters& c = r.phase[static_cast<int>(p)];
      wall.push_back(static_cast<double>(c.wall_ns) / 1e3);
      cpu.push_back(static_cast<double>(c.cpu_ns) / 1e3);
      minor.push_back(static_cast<double>(c.minor_faults));
      major.push_back(static_cast<double>(c.major_faults));
      if (c.syscalls >= 0) sys.push_back(static_cast<double>(c.syscalls));
      for (int e = 0; e < kNumPerfEvents; ++e) {
        if (c.events[e] >= 0) events[static_cast<size_t>(e)].push_back(static_cast<double>(c.events[e]));
      }
    }
    PhaseStats& ps = s.phases[static_cast<int>(p)];
    ps.wall_us = backendlab::Summarize(wall);
    ps.cpu_us = backendlab::Summarize(cpu).median;
    ps.minor_faults = backendlab::Summarize(minor).median;
    ps.major_faults = backendlab::Summarize(major).median;
    ps.syscalls = sys.empty() ? -1 : backendlab::Summarize(sys).median;
    for (int e = 0; e < kNumPerfEvents; ++e) {
      const std::vector<double>& v = events[static_cast<size_t>(e)];
      ps.events[static_cast<size_t>(e)] = v.empty() ? -1 : backendlab::Summarize(v).median;
    }
  }
  std::vector<double> wait, life, connect, forks;
  for (const BackendRecord& r : result.records) {
    if (r.outcome == BackendOutcome::kExited) {
      ++s.exited;
      wait.push_back(static_cast<double>(r.WaitNs()) / 1e3);
      life.push_back(static_cast<double>(r.LifetimeNs()) / 1e3);
    } else {
      ++s.crashed;
    }
    s.leaks += r.leaks_found;
  }
  for (int64_t ns : result.connect_latency_ns) connect.push_back(static_cast<double>(ns) / 1e3);
  for (int64_t ns : result.baseline_fork_ns) forks.push_back(static_cast<double>(ns));
  s.wait_us = backendlab::Summarize(wait);
  s.lifetime_us = backendlab::Summarize(life);
  s.connect_us = backendlab::Summarize(connect);
  if (result.wall_ns > 0) {
    s.connections_per_second = static_cast<double>(result.connections) * 1e9 / static_cast<double>(result.wall_ns);
  }
  const double fork_ns = backendlab::Summarize(forks).median;
  if (fork_ns > 0) s.baseline_forks_per_second = 1e9 / fork_ns;
  return s;
}

}  // namespace backendlab::lifecycle
