// What both experiments' runs share: the phases the tool announces to its
// children through shared memory, the warm-up, an interruptible sleep, and
// the sum of the children's counted system calls.
#ifndef BACKENDLAB_WAITS_INTERNAL_RUN_CONTROL_H_
#define BACKENDLAB_WAITS_INTERNAL_RUN_CONTROL_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "waits/internal/children.h"
#include "waits/syscalls_per_op.h"

namespace backendlab::waits::internal {

// A run's phases: warm-up (nothing recorded), measure, stop.
enum Phase : int32_t { kWarmup = 0, kMeasure = 1, kStop = 2 };

// Each timed run warms up this long before it measures.
inline constexpr absl::Duration kWarmupTime = absl::Milliseconds(50);

// How long the tool waits for its children once told to stop, before it
// kills them and reports the run failed.
inline constexpr int64_t kReapTimeoutMs = 10'000;

// Operations done before a counting pass starts counting: a process's first
// waits fault in code and stack pages, which belong to no round trip.
inline constexpr int64_t kCountWarmup = 200;

// Sleeps `d`, a stop request cutting it short: true if it slept it all.
bool SleepUnlessStopped(absl::Duration d);

// The calls `reports` counted (syscalls[i] for names[i], syscalls_total),
// summed and divided by `ops`.
SyscallsPerOp SumSyscalls(const std::vector<std::string>& names, std::span<const ChildReport> reports, int64_t ops);

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_RUN_CONTROL_H_
