// Counters of the calling thread from perf_event_open: software events, the
// raw_syscalls:sys_enter tracepoint and hardware events, each detected once per
// process so that a kernel or VM that refuses one is reported, not fatal. The
// only place in backendlab that calls perf_event_open.
#ifndef BACKENDLAB_PROFILING_PERF_EVENTS_H_
#define BACKENDLAB_PROFILING_PERF_EVENTS_H_

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/names.h"

struct perf_event_attr;  // <linux/perf_event.h>; only the test seam needs it

namespace backendlab::profiling {

enum class PerfEvent {
  kTaskClock,
  kPageFaults,
  kContextSwitches,
  kSyscalls,
  kCycles,
  kInstructions,
  kCacheMisses,
  kStalledCyclesFrontend,
  kStalledCyclesBackend,
};
// perf's own spelling, so that figures can be checked against `perf stat -e`;
// "syscalls" is the tracepoint raw_syscalls:sys_enter. In enum order.
inline constexpr NamedValue<PerfEvent> kPerfEventNames[] = {
    {PerfEvent::kTaskClock, "task-clock"},
    {PerfEvent::kPageFaults, "page-faults"},
    {PerfEvent::kContextSwitches, "context-switches"},
    {PerfEvent::kSyscalls, "syscalls"},
    {PerfEvent::kCycles, "cycles"},
    {PerfEvent::kInstructions, "instructions"},
    {PerfEvent::kCacheMisses, "cache-misses"},
    {PerfEvent::kStalledCyclesFrontend, "stalled-cycles-frontend"},
    {PerfEvent::kStalledCyclesBackend, "stalled-cycles-backend"},
};
inline constexpr auto kAllPerfEvents = ValuesOf(kPerfEventNames);

// NameOf(event, kPerfEventNames): perf's own spelling ("task-clock", "page-faults", "context-switches",
// "cycles", …), so that figures can be checked against `perf stat -e`;
// "syscalls" is the tracepoint raw_syscalls:sys_enter.
std::string_view PerfEventName(PerfEvent event);
absl::StatusOr<PerfEvent> ParsePerfEvent(std::string_view name);

// "task-clock,cycles": the events in the order given, each once. Groups stand
// for several: "all" (every event), "sw" or "software" (task-clock,
// page-faults, context-switches), "hw" (the hardware events). An empty or
// unknown item is InvalidArgument naming it and listing the valid names.
absl::StatusOr<std::vector<PerfEvent>> ParsePerfEventList(std::string_view comma_list);

// Counted by the CPU's PMU (cycles, instructions, cache-misses, stalled-*):
// absent in most VMs, and multiplexed when more are open than the PMU has
// registers.
bool IsHardware(PerfEvent event);

// OK, or Unavailable with the message "<name>: unavailable: <reason and how to
// get it>", e.g. "cycles: unavailable: the kernel has no hardware PMU for this
// CPU (ENOENT: typical of VMs)". Found by opening the event on the calling
// thread as perf does: kernel and user mode first, then, on EACCES/EPERM, user
// mode only (exclude_kernel, exclude_hv) for the events that still mean
// something that way; which one worked is remembered for PerfCounters::Open.
// Probed once per process and event (the first call costs a perf_event_open
// and a close); the cache is a few atomics, so this may be called from any
// thread and from a forked child, which inherits what its parent found.
absl::Status PerfEventAvailability(PerfEvent event);

// /proc/sys/kernel/perf_event_paranoid, or nullopt if it cannot be read: what
// decides whether perf (and this file) may count the kernel.
std::optional<int> PerfEventParanoid();

// Prints "backendlab: <PerfEventAvailability's message>" to `out` the first
// time it is called for an unavailable event in this process; otherwise
// nothing.
void ReportUnavailableOnce(PerfEvent event, FILE* out = stderr);

// Counters of the calling thread: the whole process when it is single-threaded,
// as a backend is. Threads it starts later and children it forks are not
// counted (no inherit), so a postmaster's counters do not absorb its backends'.
//
// Reading: each counter is one read() system call. The syscalls counter counts
// the reads of the others as well as its own, so for per-phase deltas use
// ReadAll(kBegin) before the phase and ReadAll(kEnd) after it: they read the
// syscalls counter innermost (last at kBegin, first at kEnd) and the others
// nested around it, so that the syscalls delta holds the phase's calls plus
// exactly one read(), the closing one; subtract 1. The other counters' deltas
// hold a few reads' worth of task-clock, cycles and instructions, and no page
// faults or context switches of their own.
class PerfCounters {
 public:
  enum class PhaseEdge { kBegin, kEnd };

  // Opens each *available* event of `events` (repeats are dropped) as a
  // separate counting (not sampling) counter, enabled at once. Never fails:
  // an event the kernel refuses reads -1 and appears in Unavailable().
  // Costs one perf_event_open per event (none for one this process already
  // knows is refused; two the first time perf's user-mode fallback is
  // needed): open before what you measure, and keep the list short in
  // short-lived processes.
  static PerfCounters Open(std::span<const PerfEvent> events);

  // Counters of another process `pid` and, with inheritance, of every child it
  // forks from now on: a child's counts join the parent's when the child
  // exits, so a postmaster's counters read after its backends were reaped hold
  // every backend's whole life. Children forked before the open are not
  // counted. Not cached like Open: whether the kernel lets this process count
  // that one depends on the target (its owner, perf_event_paranoid), so every
  // event is opened as asked and a refusal says why in Unavailable(). The
  // ReadAll nesting rule does not apply: the target does not make our reads.
  static PerfCounters OpenProcess(pid_t pid, std::span<const PerfEvent> events);

  // No counters: every Read gives -1.
  PerfCounters() = default;
  PerfCounters(PerfCounters&& other) noexcept;
  PerfCounters& operator=(PerfCounters&& other) noexcept;
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;
  ~PerfCounters();

  // The events asked for, without repeats, open or not: ReadAll's order.
  const std::vector<PerfEvent>& events() const { return events_; }

  // The count since Open, this read() included for syscalls; -1 when the event
  // is not open here or the read fails, or when a multiplexed hardware counter
  // has not been on the PMU at all yet. Hardware counts that were multiplexed
  // are scaled by time enabled / time running, as perf stat does.
  int64_t Read(PerfEvent event) const;

  // Read() of every event into out[i] for events()[i], in the nesting order
  // described above. out.size() must equal events().size(). No allocation.
  void ReadAll(PhaseEdge edge, std::span<int64_t> out) const;

  // Why each event asked for but not open is missing, in events() order.
  std::vector<absl::Status> Unavailable() const;

 private:
  std::vector<PerfEvent> events_;
  std::vector<int> fds_;                 // -1: not open
  std::vector<absl::Status> why_not_;    // OK where open
  std::vector<size_t> begin_order_;      // indices into events_, syscalls last
};

// System calls of the calling thread by kind: one counter per name on the
// tracepoint syscalls:sys_enter_<name>, and one on raw_syscalls:sys_enter for
// all of them, in one counter group so that one read() reads every count at
// once. Not inherited: a forked child opens its own. Needs what `syscalls`
// needs (tracefs mounted, perf_event_paranoid <= 1 or CAP_PERFMON).
//
// Reading: the tracepoint fires when a call enters the kernel, before it
// runs, so a Read()'s own read() is already in the counts it returns. Between
// two Read()s, then, the counts hold the calls made between them plus the
// closing read() (in `total`, and in `read` if it is counted): Between()
// subtracts it.
// Whether this kernel has the tracepoint syscalls:sys_enter_<name> (false
// too where tracefs is not mounted): for a caller that counts what it can.
bool HasSyscallTracepoint(std::string_view name);

class SyscallCounters {
 public:
  // The counts of one Read(): by_kind[i] for names()[i], and every call.
  struct Counts {
    std::vector<int64_t> by_kind;
    int64_t total = 0;
  };

  // `names` as the kernel spells them ("epoll_wait", "close", "read"), each
  // once. A name with no tracepoint is InvalidArgument naming it; tracefs
  // missing or a refusal is Unavailable with PerfEventAvailability(kSyscalls)'s
  // message. Costs one perf_event_open per name, plus one: open before what
  // you measure (the first open of a tracepoint on a machine can take
  // milliseconds while the kernel enables it).
  static absl::StatusOr<SyscallCounters> Open(std::span<const std::string_view> names);

  // The same for another process `pid` and, inherited, every child it forks
  // from now on (a postmaster and its backends: a child's counts join the
  // parent's when the child exits, as PerfCounters::OpenProcess's do). One
  // counter per kind, not a group, each read on its own: the target makes
  // none of our reads, so Between() takes nothing out.
  static absl::StatusOr<SyscallCounters> OpenProcess(pid_t pid, std::span<const std::string_view> names);

  SyscallCounters() = default;
  SyscallCounters(SyscallCounters&& other) noexcept;
  SyscallCounters& operator=(SyscallCounters&& other) noexcept;
  SyscallCounters(const SyscallCounters&) = delete;
  SyscallCounters& operator=(const SyscallCounters&) = delete;
  ~SyscallCounters();

  const std::vector<std::string>& names() const { return names_; }

  // One read() of the whole group into `out` (resized once, then reused: no
  // allocation after the first call). False if the read fails.
  bool Read(Counts& out) const;

  // end - begin, less the closing Read()'s own read() (see above).
  Counts Between(const Counts& begin, const Counts& end) const;
  // The same into `out`, reusing its storage: no allocation once it is sized.
  void Between(const Counts& begin, const Counts& end, Counts& out) const;

 private:
  std::vector<std::string> names_;
  std::vector<int> fds_;  // fds_[0]: the group leader (all calls); then names_' order
  int read_index_ = -1;   // index of "read" in names_, or -1
  bool grouped_ = true;   // false: OpenProcess's separate counters
};

// Test only: makes every perf_event_open in this file go through `fn` (nullptr
// restores the real system call) and forgets every cached availability and
// every ReportUnavailableOnce, so that a test can simulate a kernel that
// refuses. `fn` returns a file descriptor, or -1 with errno set. Not
// thread-safe against concurrent opens; call it with no counters being opened.
using PerfEventOpenFn = long (*)(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags);
void SetPerfEventOpenForTesting(PerfEventOpenFn fn);

namespace internal {

// The "<reason>" part of an Unavailable status from this file ("" for any
// other status), for callers that word their messages their own way.
std::string_view UnavailableReason(const absl::Status& status);

}  // namespace internal

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_PERF_EVENTS_H_
