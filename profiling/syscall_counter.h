// Counts the calling process's system calls with perf_event_open on the
// tracepoint raw_syscalls:sys_enter. Where the kernel refuses (no tracefs, no
// permission, no perf), Availability() says why, once, and callers leave the
// column empty instead of failing. A one-event PerfCounters (perf_events.h).
#ifndef BACKENDLAB_PROFILING_SYSCALL_COUNTER_H_
#define BACKENDLAB_PROFILING_SYSCALL_COUNTER_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "profiling/perf_events.h"

namespace backendlab::profiling {

class SyscallCounter {
 public:
  // OK, or Unavailable with the reason and how to get the counter
  // ("syscall counts unavailable: tracefs not mounted …").
  // Checked once per process (the answer is cached).
  static absl::Status Availability();

  // A counter of the calling process's system calls from now on. Opening costs
  // a perf_event_open (a few µs); open before what you measure.
  static absl::StatusOr<SyscallCounter> Open();

  SyscallCounter(SyscallCounter&& other) noexcept = default;
  SyscallCounter& operator=(SyscallCounter&& other) noexcept = default;
  SyscallCounter(const SyscallCounter&) = delete;
  SyscallCounter& operator=(const SyscallCounter&) = delete;
  ~SyscallCounter() = default;

  // System calls entered so far, this read() included; -1 if the read fails.
  // Between two Read()s the difference includes exactly one read().
  int64_t Read() const;

 private:
  explicit SyscallCounter(PerfCounters counters) : counters_(std::move(counters)) {}
  PerfCounters counters_;
};

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_SYSCALL_COUNTER_H_
