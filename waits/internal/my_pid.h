// The calling process's pid without a system call (PostgreSQL's MyProcPid):
// glibc's getpid() enters the kernel every time, and SetLatch compares pids
// on every call. Refreshed in every child by a fork handler.
#ifndef BACKENDLAB_WAITS_INTERNAL_MY_PID_H_
#define BACKENDLAB_WAITS_INTERNAL_MY_PID_H_

#include <sys/types.h>

namespace backendlab::waits::internal {

// Async-signal-safe (one relaxed atomic load after the first call).
pid_t MyProcPid();

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_MY_PID_H_
