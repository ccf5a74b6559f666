// The wait experiment of the 2018 WaitLatchOrSocket thread
// (docs/sources.md): N client/backend process pairs doing request/response
// round trips, each backend waiting for its socket with one of the wait
// strategies — round trips per second, latency, the backends' CPU and
// system calls per round trip, close()'s wall time — per strategy × N,
// interleaved, with ratios to `long-lived`. Optionally the postgres_fdw
// shape: each backend forwards every request to a "remote" server process
// and waits for its answer with the strategy, the case in which the thread's
// perf profile had 62.6 % of its samples under close(). `backendlab waits` and
// waits_benchmark both run it.
#ifndef BACKENDLAB_WAITS_WAITS_EXPERIMENT_H_
#define BACKENDLAB_WAITS_WAITS_EXPERIMENT_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/names.h"
#include "base/statistics.h"
#include "base/summary.h"
#include "waits/latch_experiment.h"
#include "waits/wait_set.h"

namespace backendlab::waits {

enum class Transport { kUnix, kTcp };
inline constexpr NamedValue<Transport> kTransportNames[] = {{Transport::kUnix, "unix"}, {Transport::kTcp, "tcp"}};
inline std::string_view TransportName(Transport t) { return NameOf(t, kTransportNames); }
inline absl::StatusOr<Transport> ParseTransport(std::string_view name) {
  return ParseName(name, kTransportNames, "transport");
}

enum class Shape { kDirect, kFdw };
inline constexpr NamedValue<Shape> kShapeNames[] = {{Shape::kDirect, "direct"}, {Shape::kFdw, "fdw"}};
inline std::string_view ShapeName(Shape s) { return NameOf(s, kShapeNames); }
inline absl::StatusOr<Shape> ParseShape(std::string_view name) { return ParseName(name, kShapeNames, "shape"); }

// A request is about a prepared statement's Bind/Execute/Sync, an answer
// its row and completion: small, one send() each.
inline constexpr size_t kRequestBytes = 48;
inline constexpr size_t kResponseBytes = 64;

struct WaitsExperimentOptions {
  std::vector<WaitStrategy> strategies{kAllWaitStrategies.begin(), kAllWaitStrategies.end()};
  std::vector<int> pairs = {1, 2, 4, 8};
  // unix: a connected Unix-domain stream pair per client; tcp: a loopback
  // connection (127.0.0.1, an ephemeral port, TCP_NODELAY as PostgreSQL
  // sets it), the listener closed once every pair is connected.
  Transport transport = Transport::kUnix;
  Shape shape = Shape::kDirect;
  int64_t rounds = 5;
  absl::Duration duration = absl::Milliseconds(300);  // measured time of each run, after a 50 ms warm-up
  bool count_syscalls = true;
  int64_t counted_round_trips = 1000;  // per pair, in the counting pass
};

struct WaitsRow {
  WaitStrategy strategy;
  int pairs = 0;
  Summary round_trips_per_second;  // all pairs together, over the rounds
  std::vector<double> round_trips_per_second_by_round;  // the same, each round's, in round order
  Summary round_trip_us;           // the clients' round trips, every measured one
  double user_us = 0, sys_us = 0;  // the backends' CPU per round trip (median of rounds)
  double waits = 0;                // the backends' waits per round trip (median of rounds)
  double close_us = 0;             // the backends' wall time in close() of wait sets, per round trip
  double close_share = 0;          // close_us / sys_us: wall time over CPU time, not a share of a profile
  std::optional<SyscallsPerOp> syscalls;  // the backends' calls per round trip, by kind
  // Round trips/s over long-lived's at the same pairs, paired within each
  // round (base/statistics.h); absent without long-lived in the run;
  // long-lived's own: exactly 1, without an interval.
  std::optional<RatioEstimate> vs_long_lived;
};

struct WaitsExperimentResult {
  std::vector<WaitsRow> rows;  // strategies in the order given, each with every pair count
  absl::Status syscalls_status = absl::OkStatus();
};

// Strategies and pair counts listed once each, pairs 1..64, rounds 1..1000,
// duration 10 ms..60 s, counted round trips 100..10^6; enough descriptors
// (RLIMIT_NOFILE) for the largest pair count.
absl::Status ValidateWaitsOptions(const WaitsExperimentOptions& options);

// Runs the rounds, then the counting pass. Every child is reaped and every
// socket closed on every path; a stop (^C) ends the run under way and
// returns StoppedStatus().
absl::StatusOr<WaitsExperimentResult> RunWaitsExperiment(const WaitsExperimentOptions& options);

// The system calls counted by kind, in report order.
inline constexpr std::string_view kWaitSyscallKinds[] = {
    "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "close", "poll", "ppoll",
    "recvfrom",      "sendto",    "read",       "write",       "kill",  "futex",
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_WAITS_EXPERIMENT_H_
