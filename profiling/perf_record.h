// A command run under `perf record` with frame-pointer call graphs, and what
// perf recorded folded like the built-in sampler's stacks; nothing of the run
// outlives the process that asked for it.
#ifndef BACKENDLAB_PROFILING_PERF_RECORD_H_
#define BACKENDLAB_PROFILING_PERF_RECORD_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "profiling/folded_stacks.h"

namespace backendlab::profiling {

struct PerfRecordOptions {
  std::vector<std::string> command;  // the workload: argv, [0] a path
  std::string data_path;             // perf.data
  std::string output_path;           // the workload's stdout (its stderr passes through)
  int frequency_hz = 1000;
};

// Runs `perf record -q -e cpu-clock -F HZ --call-graph=fp -o DATA -- COMMAND`,
// then `perf script`, and folds its output with the comm as the root frame,
// kernel frames dropped (kernel time charged to the user frame that entered
// the kernel) and short names, so that it compares with the sampler's stacks.
// `on_start` is given perf record's argv just before it starts.
//
// Errors, each one line:
//   FailedPrecondition "perf is not installed (Debian: apt-get install linux-perf)";
//   Unavailable "perf record failed (exit N; ...)" naming perf_event_paranoid
//   and where the workload's output is; Unavailable when perf script fails;
//   Cancelled when a stop was requested (base/interrupt.h) while perf ran:
//   perf was told to stop (SIGTERM: it ends its workload and reaps it) and
//   was reaped, SIGKILLed after a grace period if it did not end.
//
// Nothing outlives the caller even when it is killed outright (SIGKILL):
// perf is started with PR_SET_PDEATHSIG (SIGKILL: nobody will read its
// data), and the workload, when its main() starts with DieWithParentIfAsked()
// (backendlab's does), sets its own (SIGTERM), so that it runs its own stop
// handling when perf dies: its postmaster and backends are reaped by it.
absl::StatusOr<FoldedStacks> RecordUnderPerf(const PerfRecordOptions& options,
                                             const std::function<void(const std::vector<std::string>&)>& on_start);

// The environment variable through which RecordUnderPerf tells the workload
// (a grandchild it cannot prepare itself: perf forks and execs it) the pid of
// its parent, perf.
inline constexpr char kDieWithParentEnv[] = "BACKENDLAB_DIE_WITH_PARENT";

// In a process started under RecordUnderPerf: sets PR_SET_PDEATHSIG (SIGTERM)
// and ends the process at once if the parent named in kDieWithParentEnv is
// already gone; removes the variable so that no later child inherits it.
// Does nothing without the variable. A workload calls it first thing in
// main(), before it starts any process of its own; nothing runs it
// implicitly.
void DieWithParentIfAsked();

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_PERF_RECORD_H_
