// The latch experiment of the 2010 latch thread (docs/sources.md): two
// processes waking each other in turn through a pair of latches (a
// ping-pong), for each implementation — round trips per second, latency,
// CPU and system calls per round trip — and what a SetLatch costs when the
// owner is not asleep. `backendlab latch` and waits_benchmark both run it.
#ifndef BACKENDLAB_WAITS_LATCH_EXPERIMENT_H_
#define BACKENDLAB_WAITS_LATCH_EXPERIMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/statistics.h"
#include "base/summary.h"
#include "waits/latch.h"
#include "waits/syscalls_per_op.h"

namespace backendlab::waits {

struct LatchExperimentOptions {
  std::vector<LatchKind> latches{kAllLatches.begin(), kAllLatches.end()};
  int64_t rounds = 5;
  // Measured time of each ping-pong run, after a 50 ms warm-up.
  absl::Duration duration = absl::Milliseconds(300);
  // Where the two processes run: {} wherever the scheduler puts them; {c}
  // both on CPU c; {a, b} the first on a, the second on b.
  std::vector<int> cpus;
  // After the rounds, one run per latch with every system call counted by
  // kind (where the kernel allows: the syscalls tracepoints).
  bool count_syscalls = true;
  int64_t counted_round_trips = 2000;
  // SetLatch calls on an owner that is busy (never sleeping), per run.
  int64_t busy_sets = 20000;
};

struct LatchRow {
  LatchKind latch;
  Summary round_trips_per_second;  // over the rounds: median, min, max
  std::vector<double> round_trips_per_second_by_round;  // the same, each round's, in round order
  // Round trips/s over the baseline's (the first latch listed), paired
  // within each round (base/statistics.h); the baseline's own is exactly 1,
  // without an interval.
  RatioEstimate vs_baseline;
  Summary round_trip_us;           // every measured round trip of every round
  double user_us = 0, sys_us = 0;  // CPU per round trip, both processes (median of rounds)
  std::optional<SyscallsPerOp> syscalls;  // per round trip, both processes
  // A SetLatch on a busy owner (running, never waiting): the setter's wall
  // time per call (median of rounds) and, counted, the calls it costs the
  // setter (inside SetLatch) and the owner (a signal's return, say). Not
  // measured with both processes on one CPU: a busy owner holds the CPU
  // the setter needs.
  std::optional<double> busy_set_ns;
  std::optional<SyscallsPerOp> busy_set_syscalls;
  std::optional<SyscallsPerOp> busy_owner_syscalls;
};

struct LatchExperimentResult {
  std::vector<LatchRow> rows;
  // Why system calls were not counted, if they were asked for and not.
  absl::Status syscalls_status = absl::OkStatus();
};

// The ranges every caller checks: latches listed at most once, rounds 1..1000,
// duration 10 ms..60 s, cpus at most two and each one this process may run
// on, counted round trips 100..10^7, busy sets 100..10^8.
absl::Status ValidateLatchOptions(const LatchExperimentOptions& options);

// "any" → {}, "0" → {0}, "0,1" → {0, 1}. Only the syntax; ValidateLatchOptions checks the CPUs.
absl::StatusOr<std::vector<int>> ParseCpus(std::string_view text);

// Runs the rounds (each latch once per round, in a shuffled order), then the
// counting pass. Children are reaped and nothing is left on every path; a
// stop (^C) ends the run under way and returns StoppedStatus().
absl::StatusOr<LatchExperimentResult> RunLatchExperiment(const LatchExperimentOptions& options);

// The system calls the experiment counts by kind, in report order.
inline constexpr std::string_view kLatchSyscallKinds[] = {
    "kill", "write", "read", "select", "pselect6", "poll", "ppoll", "epoll_wait", "epoll_pwait", "futex", "rt_sigreturn",
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_LATCH_EXPERIMENT_H_
