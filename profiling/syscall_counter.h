// Counts the calling process's system calls with perf_event_open on the
// tracepoint raw_syscalls:sys_enter. Where the kernel refuses (no tracefs, no
// permission, no perf), Availability() says why, once, and callers leave the
// column empty instead of failing.
#ifndef BACKENDLAB_PROFILING_SYSCALL_COUNTER_H_
#define BACKENDLAB_PROFILING_SYSCALL_COUNTER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace backendlab::profiling {

class SyscallCounter {
 public:
  // OK, or Unavailable with the reason and how to get the counter.
  // Checked once per process (the answer is cached).
  static absl::Status Availability();

  // A counter of the calling process's system calls from now on. Opening costs
  // a perf_event_open (a few µs); open before what you measure.
  static absl::StatusOr<SyscallCounter> Open();

  SyscallCounter(SyscallCounter&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  SyscallCounter& operator=(SyscallCounter&& other) noexcept;
  SyscallCounter(const SyscallCounter&) = delete;
  SyscallCounter& operator=(const SyscallCounter&) = delete;
  ~SyscallCounter();

  // System calls entered so far, this read() included; -1 if the read fails.
  // Between two Read()s the difference includes exactly one read().
  int64_t Read() const;

 private:
  explicit SyscallCounter(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_SYSCALL_COUNTER_H_
