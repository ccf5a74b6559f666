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

struct SystemWideRecordOptions {
  std::string work_dir;  // private, existing: perf.data, the control fifos and perf's log go here
  int frequency_hz = 999;  // not 1000: off the kernel tick, so timer work is not sampled in lockstep
  // perf's --call-graph: "dwarf" for binaries without frame pointers (Debian's
  // PostgreSQL), "fp" for a frame-pointer build.
  std::string call_graph = "dwarf";
};

struct SystemWideRecording {
  std::vector<std::string> record_command;  // perf record's argv
  std::string data_path;                    // work_dir/perf.data
  // `perf script --no-inline --show-task-events --show-lost-events -F comm,pid,tid,time,event,ip,sym,dso`:
  // every CPU's samples with kernel and user frames, the LOST records, and the FORK/COMM/EXIT
  // records (perf synthesizes FORK records at time 0 for the tasks that
  // existed when it started) from which a process tree is built.
  std::string script;
  double recorded_seconds = 0;  // from perf's "enable" acknowledged to its "disable" acknowledged
};

// Records every CPU (`perf record -a -e cpu-clock -F HZ --call-graph=MODE`)
// while `workload` runs, and nothing before or after it: perf starts with its
// events disabled (-D -1) and is told through its control fifos
// (--control=fifo:CTL,ACK) to enable them; `workload` runs only once perf has
// acknowledged, and perf is disabled (acknowledged), told to end (SIGINT) and
// reaped when it returns. Then `perf script` as above; --no-inline matters: with
// inline frames resolved through addr2line, perf script took 157 s instead of 1.7 s
// for a 3 s recording on the development VM.
//
// System-wide rather than `-p PID` with inheritance: the latter cost about
// 50 % of a PostgreSQL server's connection rate here, -a 5-10 % (pgreal/README.md).
//
// Errors, each one line: FailedPrecondition when perf is not installed;
// Unavailable when perf ends before acknowledging (-a needs root,
// CAP_PERFMON or kernel.perf_event_paranoid <= 0: the message names the
// level) or when perf or perf script fails;
// `workload`'s own error (perf stopped and reaped first); Cancelled when a
// stop was requested (base/interrupt.h): perf is told to stop and reaped.
// Nothing outlives the caller, as with RecordUnderPerf (PR_SET_PDEATHSIG).
absl::StatusOr<SystemWideRecording> RecordSystemWide(const SystemWideRecordOptions& options,
                                                     const std::function<absl::Status()>& workload);

// Whether RecordSystemWide can run here, found out before a long run rather
// than after it: FailedPrecondition when perf is not installed, Unavailable
// when neither root nor kernel.perf_event_paranoid <= 0 allows recording
// every CPU (CAP_PERFMON is not looked for: RecordSystemWide still says
// so if perf is refused).
absl::Status SystemWideRecordingAvailable();

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
