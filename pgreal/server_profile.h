// Where a real PostgreSQL server's time goes while a workload runs, by
// phase of a connection's life: every CPU sampled with perf (DWARF call
// graphs), the server's processes picked out of it, each sample classified
// by the phase rules (pgreal/phase_rules.h).
#ifndef BACKENDLAB_PGREAL_SERVER_PROFILE_H_
#define BACKENDLAB_PGREAL_SERVER_PROFILE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "profiling/folded_stacks.h"

namespace backendlab::pgreal {

struct ServerProfileOptions {
  int major = 15;           // the server's PostgreSQL major version: chooses the rules
  int frequency_hz = 999;   // perf record -F
  // Where perf.data and perf's control fifos go: empty = a private mkdtemp
  // directory under $TMPDIR (or /tmp), removed afterwards; otherwise an
  // existing directory, and perf.data is kept there.
  std::string work_dir;
};

struct PhaseSamples {
  std::string phase;  // a kPhaseNames word, or kUnclaimed
  int64_t samples = 0;
};

struct ServerProfile {
  // Every server sample, kernel frames kept (copy_process, do_exit), root
  // frame the process role: "postmaster", "backend", or an auxiliary
  // process's name ("checkpointer", "walwriter", ...).
  profiling::FoldedStacks stacks;
  // The same samples by phase (kUnclaimed included), each under its role.
  std::map<std::string, profiling::FoldedStacks> by_phase;
  // Every phase word of kPhaseNames in order, then kUnclaimed: always all
  // rows, zero or not.
  std::vector<PhaseSamples> phases;
  int64_t server_samples = 0;     // == stacks.total_samples()
  int64_t unclaimed_samples = 0;  // also the kUnclaimed row
  int64_t other_samples = 0;      // dropped: other processes' and the idle task's
  int64_t lost_samples = 0;       // perf could not keep them (ring buffer full), whoever's they were
  int64_t backends_forked = 0;    // processes the postmaster (or its children) forked while recorded
  std::string unwinder = "dwarf";
  double record_seconds = 0;      // perf enabled → disabled
  int frequency_hz = 0;
  int major = 0;
  std::vector<std::string> perf_command;  // perf record's argv
};

// Records every CPU while `workload` runs (profiling::RecordSystemWide: perf
// is enabled before workload() starts and disabled when it returns), keeps
// the samples of `postmaster` and its descendants, names each process's role
// and classifies each sample. The auxiliary processes are the postmaster's
// children that exist when the call starts (named from /proc/PID/cmdline,
// "postgres: checkpointer " -> "checkpointer"); every process the server
// forks during the recording is a `backend` (exact with autovacuum off and no
// parallel workers or background workers starting meanwhile).
//
// Errors: RecordSystemWide's (perf missing: FailedPrecondition; refused:
// Unavailable naming perf_event_paranoid; a stop request: Cancelled);
// workload()'s own; NotFound when `postmaster` is not running.
absl::StatusOr<ServerProfile> ProfileServer(pid_t postmaster, const ServerProfileOptions& options,
                                            const std::function<absl::Status()>& workload);

// The part of ProfileServer after the recording, for tests on canned perf
// output: `perf_script` is `perf script --show-task-events` text;
// `aux_roles` names the auxiliary processes by pid.
absl::StatusOr<ServerProfile> BuildServerProfile(std::string_view perf_script, int64_t postmaster,
                                                 const absl::flat_hash_map<int64_t, std::string>& aux_roles,
                                                 int major);

// The postmaster's children now, by pid, named as ProfileServer names them.
absl::flat_hash_map<int64_t, std::string> AuxiliaryProcesses(pid_t postmaster);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_SERVER_PROFILE_H_
