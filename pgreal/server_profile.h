// Where a real PostgreSQL server's time goes while a workload runs, by
// phase of a connection's life, from either of two profilers: perf (every
// CPU sampled, DWARF call graphs, the server's processes picked out), or the
// built-in sampler inside the server (the sampler library, LD_PRELOADed into
// the postmaster and re-armed in every process it forks). Each sample is
// classified by the phase rules (pgreal/phase_rules.h), the same for both.
#ifndef BACKENDLAB_PGREAL_SERVER_PROFILE_H_
#define BACKENDLAB_PGREAL_SERVER_PROFILE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/names.h"
#include "pgreal/phase_rules.h"
#include "profiling/exports.h"
#include "profiling/folded_stacks.h"
#include "profiling/process_symbolizer.h"
#include "profiling/sample_buffer.h"
#include "profiling/sample_file.h"
#include "profiling/symbolizer.h"

namespace backendlab::pgreal {

// pg --profile's profilers, one word each everywhere (flag, JSON, report).
enum class Profiler {
  kPerf,     // perf record -a, DWARF call graphs: kernel frames too; needs perf and root or perf_event_paranoid <= 0
  kBuiltin,  // the sampler library in the server: user-space stacks (libunwind); needs neither
};
inline constexpr NamedValue<Profiler> kProfilerNames[] = {{Profiler::kPerf, "perf"}, {Profiler::kBuiltin, "builtin"}};
inline std::string_view ProfilerName(Profiler p) { return NameOf(p, kProfilerNames); }
inline absl::StatusOr<Profiler> ParseProfiler(std::string_view name) { return ParseName(name, kProfilerNames, "profiler"); }

struct ServerProfileOptions {
  int major = 15;           // the server's PostgreSQL major version: chooses the rules
  int frequency_hz = 999;   // perf record -F
  // Where perf.data and perf's control fifos go: empty = a private mkdtemp
  // directory under $TMPDIR (or /tmp), removed afterwards; otherwise an
  // existing directory, and perf.data is kept there.
  std::string work_dir;
};

struct PhaseSamples {
  std::string phase;  // a RealPhase's name (kRealPhaseNames), or kUnclaimed
  int64_t samples = 0;
};

struct ServerProfile {
  std::string profiler = "perf";  // a kProfilerNames word
  // Every server sample, kernel frames kept (copy_process, do_exit), root
  // frame the process role: "postmaster", "backend", or an auxiliary
  // process's name ("checkpointer", "walwriter", ...).
  profiling::FoldedStacks stacks;
  // The same without kernel frames (kernel time charged to the user frame
  // that entered the kernel): what a user-space sampler sees, so what the
  // two profilers' rankings compare on. The built-in sampler's stacks are
  // all user space: the same as `stacks`. A sample with no user frame at all
  // is left out of it and counted in kernel_only_samples.
  profiling::FoldedStacks user_stacks;
  int64_t kernel_only_samples = 0;
  // The same samples by phase (kUnclaimed included), each under its role.
  std::map<std::string, profiling::FoldedStacks> by_phase;
  // Every RealPhase in order, then kUnclaimed: always all rows, zero or not.
  std::vector<PhaseSamples> phases;
  int64_t server_samples = 0;     // == stacks.total_samples()
  // The row of `phase` (a RealPhase's name or kUnclaimed) in `phases`; -1
  // for a word that is neither.
  int64_t SamplesIn(std::string_view phase) const {
    for (const PhaseSamples& p : phases) {
      if (p.phase == phase) return p.samples;
    }
    return -1;
  }
  int64_t SamplesIn(RealPhase phase) const { return SamplesIn(RealPhaseName(phase)); }
  int64_t unclaimed_samples = 0;  // also the kUnclaimed row
  // Of those, the samples with a frame no symbol names ("[postgres]",
  // "[unknown]": a stripped binary's static functions, a library without
  // symbols), which no rule can match; the rest matched no rule.
  int64_t unclaimed_unnamed_samples = 0;
  int64_t other_samples = 0;      // dropped: other processes' and the idle task's (perf)
  // Could not be kept: perf's ring buffer full (whoever's they were); the
  // sample file full, or a sample no process finished (builtin).
  int64_t lost_samples = 0;
  int64_t backends_forked = 0;    // processes the postmaster (or its children) forked while recorded
  int64_t unarmed_processes = 0;  // builtin: processes forked meanwhile whose timer could not be armed (unsampled)
  std::string unwinder = "dwarf";
  double record_seconds = 0;      // perf enabled → disabled
  int frequency_hz = 0;
  int major = 0;
  std::vector<std::string> perf_command;  // perf record's argv
  // perf's samples in time: each one's process, time (ns on perf's clock)
  // and phase (a RealPhase, or kNumRealPhases for kUnclaimed), in
  // the order recorded; empty for the built-in sampler, whose samples carry
  // no time. What TraceSpans draws.
  struct TimedSample {
    int64_t pid = 0;
    int64_t time_ns = 0;
    int32_t phase = 0;
  };
  std::vector<TimedSample> timeline;
  int64_t postmaster_pid = 0;      // the sampled server's
  std::vector<int64_t> aux_pids;   // its auxiliary processes (named by their roles in `stacks`)
};

// Every sample once, rooted at its process's role, then "[phase]", then
// its frames: what the exports read (profiling/exports.h).
profiling::FoldedStacks LabeledStacks(const ServerProfile& profile);

// The profile's timeline as spans, for a trace (profiling/exports.h): a
// track for the postmaster and one for each of the first `backends`
// backends to be sampled, each run of samples of one process in one phase
// a span, from its first sample to one period after its last; a gap of more
// than two periods ends a span. Empty where the profile has no timeline.
std::vector<profiling::TraceSpan> TraceSpans(const ServerProfile& profile, int backends);

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

// A pass recorded by the built-in sampler of a server started with it
// (ServerOptions::builtin_sampler_hz): Record opens the sample file's gate
// around `workload` (the timers of the postmaster and of every process
// forked since run all along; signals that find the gate closed return at
// once), names the auxiliary processes as ProfileServer does, and reads the
// postmaster's mappings while it lives. Profile then symbolizes the samples
// from those mappings (the backends were forked from it without exec) and
// the files' symbol tables (profiling::ProcessSymbolizer) and classifies
// them. One recorded pass per sample file: it is read once.
class BuiltinRecording {
 public:
  BuiltinRecording(pid_t postmaster, profiling::SampleFile& file, int major)
      : postmaster_(postmaster), file_(file), major_(major) {}

  // workload()'s error, or NotFound when the postmaster is not running, or
  // its mappings cannot be read.
  absl::Status Record(const std::function<absl::Status()>& workload);
  // After Record: the profile (profiler "builtin", unwinder "libunwind").
  absl::StatusOr<ServerProfile> Profile();

 private:
  pid_t postmaster_;
  profiling::SampleFile& file_;
  int major_;
  absl::flat_hash_map<int64_t, std::string> aux_roles_;
  std::unique_ptr<profiling::ProcessSymbolizer> symbolizer_;
  int64_t processes_before_ = 0;
  int64_t failed_before_ = 0;
  double record_seconds_ = 0;
};

// BuiltinRecording::Profile's classification, for tests: every sample of
// `samples` named by `symbolizer`, its role from its pid (`postmaster`,
// `aux_roles`, else a backend).
ServerProfile BuildBuiltinServerProfile(std::span<const profiling::RawSample> samples,
                                        profiling::FrameSymbolizer& symbolizer, int64_t postmaster,
                                        const absl::flat_hash_map<int64_t, std::string>& aux_roles, int major);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_SERVER_PROFILE_H_
