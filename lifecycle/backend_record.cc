// Phase names: the same words in code, CLI, JSON, CSV and docs.
#include "lifecycle/backend_record.h"

#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "base/interrupt.h"

namespace backendlab::lifecycle {

namespace {

int64_t TimevalNs(const timeval& tv) { return int64_t{tv.tv_sec} * 1'000'000'000 + int64_t{tv.tv_usec} * 1000; }

}  // namespace

void CompleteRecord(const BackendEnd& end, BackendRecord& r) {
  r.pid = end.pid;
  r.reaped_ns = end.reaped_ns;
  if (WIFSIGNALED(end.wait_status)) {
    r.signal = WTERMSIG(end.wait_status);
    const bool stop = std::find(std::begin(kStopSignals), std::end(kStopSignals), r.signal) != std::end(kStopSignals);
    r.outcome = stop ? BackendOutcome::kStopped : BackendOutcome::kCrashed;
  } else {
    r.exit_status = WEXITSTATUS(end.wait_status);
    r.outcome = r.exit_status == 0                   ? BackendOutcome::kExited
                : r.exit_status == kBackendErrorExit ? BackendOutcome::kFailed
                                                     : BackendOutcome::kCrashed;
  }
  if (end.forked && r.child_start_ns != 0) {
    PhaseCounters& f = r.phase[static_cast<int>(Phase::kFork)];
    f.wall_ns = r.child_start_ns - r.accept_ns;
    f.cpu_ns += end.fork_parent_cost.cpu_ns;
    f.minor_faults += end.fork_parent_cost.minor_faults;
    f.major_faults += end.fork_parent_cost.major_faults;
    r.phases_done |= 1u << static_cast<int>(Phase::kFork);
  }
  if (end.usage != nullptr && r.exit_ns != 0) {
    PhaseCounters& p = r.phase[static_cast<int>(Phase::kReap)];
    p.wall_ns = r.reaped_ns - r.exit_ns;
    // The kernel's teardown of the process is charged to the child: its
    // totals at reap minus what it had used when it called _exit.
    const rusage& u = *end.usage;
    p.cpu_ns = std::max<int64_t>(0, TimevalNs(u.ru_utime) + TimevalNs(u.ru_stime) - r.exit_cpu_ns);
    p.minor_faults = std::max<int64_t>(0, u.ru_minflt - r.exit_minor_faults);
    p.major_faults = std::max<int64_t>(0, u.ru_majflt - r.exit_major_faults);
    r.phases_done |= 1u << static_cast<int>(Phase::kReap);
  }
  if (end.thread_end != nullptr && r.exit_ns != 0) {
    // No kernel teardown: the thread's last calls (closing its connection)
    // and the postmaster's join.
    PhaseCounters& p = r.phase[static_cast<int>(Phase::kReap)];
    p.wall_ns = r.reaped_ns - r.exit_ns;
    p.cpu_ns = std::max<int64_t>(0, end.thread_end->cpu_ns - r.exit_cpu_ns) + end.join_cost.cpu_ns;
    p.minor_faults = std::max<int64_t>(0, end.thread_end->minor_faults - r.exit_minor_faults) + end.join_cost.minor_faults;
    p.major_faults = std::max<int64_t>(0, end.thread_end->major_faults - r.exit_major_faults) + end.join_cost.major_faults;
    r.phases_done |= 1u << static_cast<int>(Phase::kReap);
  }
}

std::string DescribeEnd(const BackendRecord& r) {
  std::string last_phase = "before init_buffers";
  for (Phase p : kAllPhases) {
    if (p != Phase::kReap && p != Phase::kFork && r.Done(p)) last_phase = absl::StrCat("after ", std::string(PhaseName(p)));
  }
  std::string how;
  if (r.outcome == BackendOutcome::kFailed) {
    how = "failed: ended on an error it printed";
  } else if (r.signal != 0) {
    how = absl::StrCat("crashed: killed by signal ", r.signal, " (", strsignal(r.signal), ")");
  } else {
    how = absl::StrCat("crashed: exit code ", r.exit_status);
  }
  return absl::StrCat("backend ", r.pid, " (connection ", r.sequence, ") ", how, ", ", last_phase);
}

std::string_view PhaseName(Phase phase, BackendKind kind) {
  if (kind == BackendKind::kThread) {
    for (const auto& [value, name] : kThreadPhaseNames) {
      if (value == phase) return name;
    }
  }
  if (kind == BackendKind::kPooled) {
    for (const auto& [value, name] : kPooledPhaseNames) {
      if (value == phase) return name;
    }
  }
  return PhaseName(phase);
}

std::string SampleTagName(int32_t tag) {
  if (tag >= 0 && tag < kNumPhases) return std::string(PhaseName(static_cast<Phase>(tag)));
  for (const NamedValue<int32_t>& row : kSampleTagNames) {
    if (row.value == tag) return std::string(row.name);
  }
  return absl::StrCat("tag", tag);
}

std::vector<profiling::TraceSpan> SpansOf(const BackendRecord& r) {
  std::vector<profiling::TraceSpan> spans;
  const std::string track = absl::StrCat("backend ", r.pid, " (connection ", r.sequence, ")");
  auto add = [&](Phase p, int64_t start, int64_t duration) {
    if (r.Done(p) && duration >= 0) spans.push_back({std::string(PhaseName(p)), "phase", r.pid, track, start, duration});
  };
  add(Phase::kFork, r.accept_ns, r.child_start_ns - r.accept_ns);
  int64_t at = r.child_start_ns;
  for (Phase p : {Phase::kInitBuffers, Phase::kInitCatcache, Phase::kInitOther, Phase::kWork}) {
    add(p, at, r.phase[static_cast<int>(p)].wall_ns);
    if (r.Done(p)) at += r.phase[static_cast<int>(p)].wall_ns;
  }
  if (r.terminate_ns > r.ready_ns && r.ready_ns > 0) {
    spans.push_back({"wait", "wait", r.pid, track, r.ready_ns, r.terminate_ns - r.ready_ns});
  }
  at = r.terminate_ns;
  for (Phase p : {Phase::kExitCheck, Phase::kTeardown}) {
    add(p, at, r.phase[static_cast<int>(p)].wall_ns);
    if (r.Done(p)) at += r.phase[static_cast<int>(p)].wall_ns;
  }
  add(Phase::kReap, r.exit_ns, r.reaped_ns - r.exit_ns);
  return spans;
}

}  // namespace backendlab::lifecycle
