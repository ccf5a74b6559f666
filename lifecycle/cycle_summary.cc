// Summaries of a run's histograms.
#include "lifecycle/cycle_summary.h"

#include "absl/strings/str_cat.h"
#include "base/interleaved.h"

namespace backendlab::lifecycle {
namespace {

// The median of a histogram of counts; -1 when nothing was counted.
double MedianOrMissing(const Histogram& h) { return h.count() > 0 ? h.Quantile(0.5) : -1; }

// "N backend(s) <what>" with the first such backend described (DescribeEnd),
// if its record was kept.
absl::Status BackendsEnded(const CycleStats& b, int64_t n, BackendOutcome outcome, const char* what) {
  for (const BackendRecord& r : b.incidents) {
    if (r.outcome != outcome) continue;
    return absl::AbortedError(n == 1 ? DescribeEnd(r) : absl::StrCat(n, " backends ", what, "; the first: ", DescribeEnd(r)));
  }
  return absl::AbortedError(absl::StrCat(n, " backend(s) ", what, " (listed in the report)"));
}

}  // namespace

CycleSummary Summarize(const CycleResult& result) {
  CycleSummary s;
  const CycleStats& b = result.backends;
  for (Phase p : kAllPhases) {
    const PhaseHistograms& h = b.phases[static_cast<int>(p)];
    PhaseStats& ps = s.phases[static_cast<int>(p)];
    ps.wall_us = h.wall_ns.Summarize(1e-3);
    ps.cpu_us = h.cpu_ns.Quantile(0.5) / 1e3;
    ps.minor_faults = h.minor_faults.Quantile(0.5);
    ps.major_faults = h.major_faults.Quantile(0.5);
    ps.syscalls = MedianOrMissing(h.syscalls);
    for (int e = 0; e < kNumPerfEvents; ++e) ps.events[static_cast<size_t>(e)] = MedianOrMissing(h.events[static_cast<size_t>(e)]);
  }
  s.exited = b.exited;
  s.crashed = b.crashed;
  s.failed = b.failed;
  s.leaks = b.leaks;
  s.wait_us = b.wait_ns.Summarize(1e-3);
  s.lifetime_us = b.lifetime_ns.Summarize(1e-3);
  s.connect_us = result.connect_latency_ns.Summarize(1e-3);
  s.query_us = result.query_latency_ns.Summarize(1e-3);
  if (result.wall_ns > 0) {
    s.connections_per_second = static_cast<double>(result.connections) * 1e9 / static_cast<double>(result.wall_ns);
  }
  const double fork_ns = result.baseline_fork_ns.Quantile(0.5);
  if (fork_ns > 0) s.baseline_forks_per_second = 1e9 / fork_ns;
  return s;
}

absl::Status RunOutcome(const CycleResult& result, const CycleSummary& s) {
  if (result.interrupted) return StoppedStatus();
  const int64_t crashed = s.crashed + result.backends.warmup_crashed;
  if (crashed > 0) return BackendsEnded(result.backends, crashed, BackendOutcome::kCrashed, "crashed");
  // Each printed its error on stderr as it ended.
  const int64_t failed = s.failed + result.backends.warmup_failed;
  if (failed > 0) return BackendsEnded(result.backends, failed, BackendOutcome::kFailed, "failed on errors they printed");
  // A backend killed by SIGTERM/SIGINT/SIGHUP/SIGQUIT while the tool was not
  // asked to stop was killed from outside: a failed run, not a clean stop.
  if (result.backends.stopped > 0) {
    return absl::AbortedError(absl::StrCat(result.backends.stopped, " backend(s) killed by a stop signal sent to them alone"));
  }
  if (result.failed_connections > 0) {
    return absl::AbortedError(absl::StrCat(result.failed_connections, " connection(s) closed before \"ready\""));
  }
  if (result.connections == 0) return absl::AbortedError("no connection completed");
  return absl::OkStatus();
}

}  // namespace backendlab::lifecycle
