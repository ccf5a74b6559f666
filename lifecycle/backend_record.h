// What one backend's life cost, phase by phase: the record a backend writes
// into its shared-memory slot as it goes, and the postmaster completes.
#ifndef BACKENDLAB_LIFECYCLE_BACKEND_RECORD_H_
#define BACKENDLAB_LIFECYCLE_BACKEND_RECORD_H_

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "base/names.h"
#include "base/resource_usage.h"
#include "profiling/exports.h"
#include "profiling/perf_events.h"

struct rusage;

namespace backendlab::lifecycle {

// The phases of a backend's life, in order. The same words in the CLI, JSON,
// CSV and docs.
enum class Phase : int {
  kFork,          // accept -> the backend's first phase begins (postmaster's fork() + the child's start-up)
  kInitBuffers,   // the refcount table (InitBufferPoolAccess)
  kInitCatcache,  // the catalog caches (InitCatalogCache)
  kInitOther,     // the rest of a real backend's start-up, as a weight profile has it (nothing without one)
  kWork,          // pins and catcache lookups
  kExitCheck,     // the buffer leak check, per policy (AtProcExit_Buffers)
  kTeardown,      // the backend's own frees and unmaps
  kReap,          // _exit -> reaped by the postmaster (the kernel tearing down the process)
};
inline constexpr NamedValue<Phase> kPhaseNames[] = {
    {Phase::kFork, "fork"},           {Phase::kInitBuffers, "init_buffers"}, {Phase::kInitCatcache, "init_catcache"},
    {Phase::kInitOther, "init_other"}, {Phase::kWork, "work"},               {Phase::kExitCheck, "exit_check"},
    {Phase::kTeardown, "teardown"},   {Phase::kReap, "reap"},
};
inline constexpr auto kAllPhases = ValuesOf(kPhaseNames);
inline constexpr int kNumPhases = static_cast<int>(std::size(kAllPhases));
static_assert(kNumPhases == 8 && static_cast<int>(kAllPhases[kNumPhases - 1]) == kNumPhases - 1,
              "kPhaseNames lists every Phase once, in enum order: phases index arrays");
inline std::string_view PhaseName(Phase phase) { return NameOf(phase, kPhaseNames); }

// What a backend is: a process (forked per connection, or the tool itself
// in-process) or a thread of one server process (`cycle --mode=thread`).
// A thread's life starts and ends differently, so those two phases have
// their own words: `thread_start` (pthread_create in the postmaster and the
// thread's start, where a process has fork) and `thread_join` (the thread's
// end and its join, where a process has reap).
// A pre-forked backend serves one connection after another: `handoff`
// (the postmaster passing the connection, where a new process has fork),
// `reset` (clearing its state for the next connection, where a process has
// its teardown) and `release` (from the reset's end to the postmaster
// knowing the backend idle, where a process has reap).
enum class BackendKind { kProcess, kThread, kPooled };
inline constexpr NamedValue<Phase> kThreadPhaseNames[] = {{Phase::kFork, "thread_start"}, {Phase::kReap, "thread_join"}};
inline constexpr NamedValue<Phase> kPooledPhaseNames[] = {
    {Phase::kFork, "handoff"}, {Phase::kTeardown, "reset"}, {Phase::kReap, "release"}};
std::string_view PhaseName(Phase phase, BackendKind kind);

// What a sampled process was doing, recorded with each profiler sample: a
// backend's phase (the Phase values), or one of these.
inline constexpr int32_t kSampleTagWait = kNumPhases;            // a backend between "ready" and "terminate"
inline constexpr int32_t kSampleTagPostmaster = kNumPhases + 1;  // the postmaster, between forks
inline constexpr int32_t kSampleTagClient = kNumPhases + 2;      // inproc: the tool between backends
inline constexpr int32_t kNumSampleTags = kNumPhases + 3;
inline constexpr NamedValue<int32_t> kSampleTagNames[] = {
    {kSampleTagWait, "wait"}, {kSampleTagPostmaster, "postmaster"}, {kSampleTagClient, "client"}};
// "init_buffers", ..., "wait", "postmaster", "client"; "tag<N>" for others.
std::string SampleTagName(int32_t tag);

inline constexpr int kNumPerfEvents = static_cast<int>(std::size(profiling::kAllPerfEvents));

struct PhaseCounters {
  int64_t wall_ns = 0;
  int64_t cpu_ns = 0;
  int64_t minor_faults = 0;
  int64_t major_faults = 0;
  int64_t syscalls = -1;  // -1: not counted (kernel refused, or not measurable for this phase)
  // perf_event_open counts (--counters), indexed by PerfEvent; -1: not counted.
  int64_t events[kNumPerfEvents] = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
};
static_assert(kNumPerfEvents == 9, "PhaseCounters::events initialises one -1 per event");

enum class BackendOutcome : int32_t {
  kRunning = 0,  // never finished: it died before its exit (see signal)
  kExited = 1,   // ran to _exit(0)
  kCrashed = 2,  // killed by a signal, or an exit status other than 0 and kBackendErrorExit
  kStopped = 3,  // killed by a stop signal (base/interrupt.h), as every process of a ^C'd group is: no crash
  kFailed = 4,   // ended on an error it printed (exit status kBackendErrorExit): a failure, no crash
};

// The exit status of a backend (a process, a thread, a pre-forked backend's
// connection) that ended on an error of its own, which it printed on
// stderr ("backendlab backend PID: ..."): its record's outcome is kFailed.
inline constexpr int kBackendErrorExit = 3;

inline constexpr int kMaxReportedLeaks = 4;

// Trivially copyable: it lives in shared memory and travels through a pipe.
struct BackendRecord {
  int64_t sequence = 0;  // accept order, from 0
  int32_t pid = 0;
  BackendOutcome outcome = BackendOutcome::kRunning;
  int32_t signal = 0;       // the signal that killed it, if any
  int32_t exit_status = 0;  // its exit code, if it exited
  uint32_t phases_done = 0; // bit p: phase[p] is complete
  int32_t leaks_found = 0;  // by the exit check
  int32_t leak_buffers[kMaxReportedLeaks] = {};
  int32_t leak_counts[kMaxReportedLeaks] = {};
  int32_t exit_check_ran = 0;

  // Timestamps, CLOCK_MONOTONIC ns (one clock for all processes).
  int64_t accept_ns = 0;       // postmaster: accept() returned
  int64_t child_start_ns = 0;  // backend: start-up done, about to begin init_buffers
  int64_t ready_ns = 0;        // backend: about to send "ready"
  int64_t terminate_ns = 0;    // backend: "terminate" or EOF received
  int64_t exit_ns = 0;         // backend: about to _exit
  int64_t reaped_ns = 0;       // postmaster: waitpid returned it

  // The child's own counters at exit, so the postmaster can take the kernel's
  // teardown (wait4's totals minus these) as the reap phase.
  int64_t exit_cpu_ns = 0;
  int64_t exit_minor_faults = 0;
  int64_t exit_major_faults = 0;

  PhaseCounters phase[kNumPhases];

  bool Done(Phase p) const { return (phases_done >> static_cast<int>(p) & 1u) != 0; }
  // The backend's idle time between "ready" and "terminate": the client's
  // round trip, not a phase.
  int64_t WaitNs() const { return terminate_ns - ready_ns; }
  // accept -> reaped.
  int64_t LifetimeNs() const { return reaped_ns - accept_ns; }
};
static_assert(std::is_trivially_copyable_v<BackendRecord>,
              "records are written to shared memory and pipes byte for byte");

// A backend's end as the process that reaped it saw it.
struct BackendEnd {
  int32_t pid = 0;
  int wait_status = 0;              // waitpid's; 0: exited with status 0
  const rusage* usage = nullptr;    // wait4's totals for the child; nullptr: in-process or a thread
  bool forked = true;               // false: in-process, no fork phase
  ResourceSample fork_parent_cost{};  // the postmaster's own fork() call (a thread's: pthread_create)
  int64_t reaped_ns = 0;            // a thread's: pthread_join returned
  // A thread (a pooled backend): its own counters (SampleThread) after its
  // last call, and the postmaster's pthread_join (reading its "done");
  // together its thread_join (release) phase.
  const ResourceSample* thread_end = nullptr;
  ResourceSample join_cost{};
};

// The one place a record is completed once its backend is gone: its pid, its
// outcome, and the two phases that are not the backend's alone (fork: the
// parent's fork() added to the child's start; reap: the kernel's teardown).
// The backend writes everything else, as it goes (RunBackend).
void CompleteRecord(const BackendEnd& end, BackendRecord& record);

// A backend that did not exit cleanly, in one line: "backend PID
// (connection N) crashed: killed by signal 9 (Killed), after work", or
// "... failed: ended on an error it printed, after init_other" (the phase
// named is the last it completed).
std::string DescribeEnd(const BackendRecord& record);

// A completed record's life on a timeline, one span per phase it finished,
// on the backend's own track ("backend PID (connection N)"): fork from the
// postmaster's accept() to the backend's start, the init phases and work
// one after another from there (each its measured wall time), the wait for
// the client's "terminate", exit_check and teardown from that, and reap
// from _exit to the postmaster's waitpid. CLOCK_MONOTONIC, as recorded.
std::vector<profiling::TraceSpan> SpansOf(const BackendRecord& record);

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_BACKEND_RECORD_H_
