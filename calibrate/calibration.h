// Calibration: a backend weight profile (lifecycle/backend_weight.h) fitted
// so that the mock's backend weighs what a real PostgreSQL backend weighs on
// the same machine — its CPU per connection and how that splits into the
// phase groups, its page faults, its system calls by kind — then both
// measured side by side, at the shared_buffers it was fitted on and at one
// it was not. `backendlab calibrate` runs it and writes the profile, which
// `cycle --backend-profile=FILE` applies on this host (its CPU is
// microseconds here and its libraries this host's paths: lifecycle/
// backend_weight.h).
//
// It composes lifecycle/ (the mock) and pgreal/ (the real server): the one
// module that uses both.
#ifndef BACKENDLAB_CALIBRATE_CALIBRATION_H_
#define BACKENDLAB_CALIBRATE_CALIBRATION_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/names.h"
#include "base/server_usage.h"
#include "base/statistics.h"
#include "calibrate/phase_groups.h"
#include "lifecycle/backend_weight.h"
#include "pgreal/installation.h"

namespace backendlab::calibrate {


// One server's figures per connection, as the same run measured them, and
// the rounds they are over.
struct Weighing {
  std::vector<double> rates;          // conn/s, one per round
  std::vector<ServerUsage> rounds;    // the server's usage, one per round
  double connections_per_second = 0;  // median of the rounds
  double cpu_us = 0;                  // the server's CPU (postmaster and backends) per connection
  double minor_faults = 0;
  double syscalls = -1;               // every call less kPhaseClockSyscalls; -1 where not counted
  std::map<std::string, double> syscalls_by_kind;
  std::array<double, kNumGroups> group_cpu_us{};  // per connection
  std::array<double, kNumGroups> group_share{};   // of the four groups' sum, 0..1
  // The mock's minor faults per backend by group, from its phase counters
  // (a real server's are not split: 0).
  std::array<double, kNumGroups> group_minor_faults{};
};

// How close the mock came to the real server at one size: mock over real,
// paired within the side-by-side's rounds (base/statistics.h: geometric
// mean of the rounds' ratios, t interval on their logs). `faster` and
// `slower` say which way the mock is off. Absent where no round has both.
struct Agreement {
  std::optional<RatioEstimate> rate;  // conn/s: checked, not fitted
  std::optional<RatioEstimate> cpu_us;
  std::optional<RatioEstimate> minor_faults;
  std::optional<RatioEstimate> syscalls;
};
Agreement AgreementOf(const Weighing& mock, const Weighing& real);

// The goals of the issue that set them: CPU and faults per connection within
// 10 % of the real server's, each group's share within 5 points.
inline constexpr double kRatioGoal = 0.10;
inline constexpr double kSharePointsGoal = 5;

// A goal judged on an interval: met where the whole interval lies within
// the goal, missed where all of it lies outside, unsure where it straddles
// an edge. With one round there is no interval and the point decides.
enum class Goal { kMet, kMissed, kUnsure };
inline constexpr NamedValue<Goal> kGoalNames[] = {{Goal::kMet, "met"}, {Goal::kMissed, "missed"}, {Goal::kUnsure, "unsure"}};
Goal RatioGoalOf(const RatioEstimate& r);
// A group's share, mock against real, in points (one profile each: no interval).
Goal ShareGoalOf(double mock_share, double real_share);

struct CalibrationOptions {
  pgreal::Installation installation;  // the real server (Debian's 15 by default)
  int64_t fit_shared_buffers = int64_t{128} << 20;
  int64_t check_shared_buffers = int64_t{8} << 30;  // 0: no check
  int64_t connections = 300;  // per measured run, real and mock alike
  int64_t warmup = 20;
  int64_t rounds = 10;        // of the final side-by-side
  // The saturation check: the real server and the calibrated mock at the
  // fit's size with this many connections in flight (base/cpus.h's
  // SaturationClients, >= 2 x cores), in the side-by-side's rounds, beside
  // one client; checked, not fitted. 0: no check. At most `connections`.
  int saturation_clients = 0;
  // The real server measured this many times at one client before the
  // fit, its figures over them all: the fit aims at no single run.
  int64_t fit_rounds = 3;
  int iterations = 3;         // of the fit
  int perf_frequency_hz = 999;
  std::function<void(const std::string&)> progress;
};

struct CalibrationResult {
  lifecycle::BackendWeight weight;
  std::string server_label;      // "15/128MB"
  std::string server_version;    // postgres --version's
  std::string server_build;
  Weighing real_fit, mock_unweighted, mock_fit;  // at fit_shared_buffers, the side-by-side
  Agreement fit;                                 // mock_fit over real_fit
  bool checked = false;
  Weighing real_check, mock_check;               // at check_shared_buffers, the same profile
  Agreement check;                               // mock_check over real_check
  // At fit_shared_buffers with saturation_clients in flight (the real
  // server's groups unprofiled: totals only).
  bool saturated = false;
  Weighing real_saturated, mock_saturated;
  Agreement saturation;                          // mock_saturated over real_saturated
  // What the profile cannot do: a kind of system call the real backend makes
  // more of than a weight can make, a group the mock already spends more on.
  std::vector<std::string> notes;
};

// The system calls counted by kind on both servers: what a weight can make
// (lifecycle::kWeightSyscalls) and the ones it cannot, reported beside them.
inline constexpr std::string_view kCountedSyscalls[] = {
    "openat", "close", "read", "lseek", "fstat", "newfstatat", "mmap", "munmap", "mprotect", "brk",
    "rt_sigprocmask", "rt_sigaction", "getpid", "getrandom", "write", "sendto", "recvfrom", "clone", "wait4", "exit_group",
    "clock_gettime", "getrusage",
};

// The mock's own phase clocks: CLOCK_PROCESS_CPUTIME_ID and getrusage at
// every phase edge, ~32 calls a backend that a real one does not make.
// Left out of both sides' `syscalls` (a weight does not fit them); they are
// still in syscalls_by_kind.
inline constexpr std::string_view kPhaseClockSyscalls[] = {"clock_gettime", "getrusage"};

// Bad options are InvalidArgument; a server that cannot start, or perf
// missing (the real server's phases come from perf record), is an error
// naming why; Cancelled on a stop request. The real server is stopped and
// removed on every path.
absl::StatusOr<CalibrationResult> RunCalibration(const CalibrationOptions& options);

// The libraries a process has mapped (its /proc/PID/maps), the dynamic
// loader and the vDSO left out, in load order: what a weight's
// postmaster.libraries takes from a real postmaster.
absl::StatusOr<std::vector<std::string>> MappedLibraries(int pid);

}  // namespace backendlab::calibrate

#endif  // BACKENDLAB_CALIBRATE_CALIBRATION_H_
