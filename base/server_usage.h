// What a measured server, mock or real, used in one round: the connections
// it served and the CPU, faults and context switches of its postmaster and
// of every backend it reaped over them. The mock postmaster (lifecycle/)
// and a real PostgreSQL (pgreal/) produce the same record; "per connection"
// and the merging of rounds are computed here and nowhere else.
#ifndef BACKENDLAB_BASE_SERVER_USAGE_H_
#define BACKENDLAB_BASE_SERVER_USAGE_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/statistics.h"

namespace backendlab {

struct ServerUsage {
  int64_t connections = 0;  // served while counted: warm-up and measured
  // User + system time in the kernel's own accounting of the processes and
  // the children they reaped, on both sides (the mock: getrusage; a real
  // server: /proc, in clock ticks over the round): what designs are compared
  // on and calibrate fits.
  int64_t cpu_ns = 0;
  int64_t user_ns = -1;  // -1: the source does not split CPU
  int64_t system_ns = -1;
  // perf's task-clock, inherited by every process forked: another clock of
  // the same CPU, which on PostgreSQL reads below cpu_ns (pgreal/README.md);
  // -1: not counted.
  int64_t task_clock_ns = -1;
  int64_t minor_faults = 0;
  int64_t major_faults = 0;
  int64_t context_switches = -1;  // voluntary + involuntary; -1: not counted
  // The postmaster's own CPU, its reaped children's left out: what it spends
  // accepting, forking, keeping count and reaping, the one process every
  // connection passes through (its ceiling: ServerStats::ceiling). -1: not
  // counted.
  int64_t postmaster_cpu_ns = -1;
  // System calls of every kind (-1: not counted) and of each kind asked for.
  int64_t syscalls = -1;
  std::vector<int64_t> syscalls_by_kind;

  // Another round's usage added: a figure missing from either stays missing.
  ServerUsage& operator+=(const ServerUsage& other) {
    connections += other.connections;
    cpu_ns += other.cpu_ns;
    auto add = [](int64_t& total, int64_t part) { total = total < 0 || part < 0 ? -1 : total + part; };
    add(user_ns, other.user_ns);
    add(system_ns, other.system_ns);
    add(task_clock_ns, other.task_clock_ns);
    minor_faults += other.minor_faults;
    major_faults += other.major_faults;
    add(context_switches, other.context_switches);
    add(postmaster_cpu_ns, other.postmaster_cpu_ns);
    add(syscalls, other.syscalls);
    if (syscalls < 0 || syscalls_by_kind.size() != other.syscalls_by_kind.size()) {
      syscalls_by_kind.clear();
    } else {
      for (size_t k = 0; k < syscalls_by_kind.size(); ++k) syscalls_by_kind[k] += other.syscalls_by_kind[k];
    }
    return *this;
  }
};

// `total` over `connections`, times `scale`; -1 where the total was not
// counted (negative) or nothing was served.
inline double PerConnectionValue(int64_t total, int64_t connections, double scale = 1) {
  return total < 0 || connections <= 0 ? -1.0 : static_cast<double>(total) * scale / static_cast<double>(connections);
}

// The ceiling a postmaster sets: one CPU-second over its own CPU per
// connection (us), the conn/s it could serve on one core doing nothing
// else; 0 where its CPU was not counted.
inline double CeilingOf(double postmaster_cpu_us) { return postmaster_cpu_us > 0 ? 1e6 / postmaster_cpu_us : 0; }

// A ServerUsage divided by its connections; -1 stays -1 (not counted).
struct PerConnection {
  double cpu_us = 0;
  double user_us = -1;
  double system_us = -1;
  double task_clock_us = -1;
  double minor_faults = 0;
  double major_faults = 0;
  double context_switches = -1;
  double postmaster_cpu_us = -1;
  double syscalls = -1;
  std::vector<double> syscalls_by_kind;
};

inline PerConnection PerConnectionOf(const ServerUsage& u) {
  const double n = static_cast<double>(std::max<int64_t>(u.connections, 1));
  auto per = [n](int64_t v, double scale) { return v < 0 ? -1.0 : static_cast<double>(v) / scale / n; };
  PerConnection p;
  p.cpu_us = per(u.cpu_ns, 1e3);
  p.user_us = per(u.user_ns, 1e3);
  p.system_us = per(u.system_ns, 1e3);
  p.task_clock_us = per(u.task_clock_ns, 1e3);
  p.minor_faults = per(u.minor_faults, 1);
  p.major_faults = per(u.major_faults, 1);
  p.context_switches = per(u.context_switches, 1);
  p.postmaster_cpu_us = per(u.postmaster_cpu_ns, 1e3);
  p.syscalls = per(u.syscalls, 1);
  for (int64_t k : u.syscalls_by_kind) p.syscalls_by_kind.push_back(per(k, 1));
  return p;
}

// The rounds summed: one figure over the whole run.
inline ServerUsage Merged(std::span<const ServerUsage> rounds) {
  if (rounds.empty()) return {};
  ServerUsage total = rounds.front();
  for (size_t i = 1; i < rounds.size(); ++i) total += rounds[i];
  return total;
}

// One figure of every round, per connection: what a paired ratio is over.
template <typename Field>
std::vector<double> PerRound(std::span<const ServerUsage> rounds, Field field) {
  std::vector<double> values;
  for (const ServerUsage& u : rounds) values.push_back(field(PerConnectionOf(u)));
  return values;
}

// Each round's CPU per connection, in µs: the cost every comparison is of.
inline std::vector<double> CpuUsByRound(std::span<const ServerUsage> rounds) {
  return PerRound(rounds, [](const PerConnection& p) { return p.cpu_us; });
}

// A measured server's rounds, mock or real: conn/s and usage, one per round
// (`server` empty where the source counted none).
struct MeasuredRounds {
  std::span<const double> rates;
  std::span<const ServerUsage> server;
};

// The figures every comparison of servers is made of: the cost (the whole
// server's CPU per connection) and the rate (conn/s at the run's clients),
// as medians over the rounds with their intervals, and as ratios to a
// baseline measured in the same rounds, paired round by round.
struct ServerStats {
  MedianEstimate rate;
  MedianEstimate cpu_us;
  bool has_cpu = false;  // every round counted the server's CPU, and some
  // The postmaster's own CPU per connection, and the ceiling it sets: one
  // CPU-second over it, the conn/s a postmaster that did nothing else
  // could serve on one core (each round's, their median [interval]). Set
  // only where every round counted it, and some.
  MedianEstimate postmaster_cpu_us;
  MedianEstimate ceiling;
  bool has_postmaster_cpu = false;
  std::optional<RatioEstimate> rate_vs_baseline;  // higher is faster
  std::optional<RatioEstimate> cpu_vs_baseline;   // lower is faster
};

// `row` alone (baseline null: no ratios), or against `baseline`; the
// baseline itself is passed as `row` and `baseline` both, and gets
// SelfRatio. A ratio is absent where no round has both figures. A run
// stopped early may leave one row a round ahead, and a row that left the
// rounds once decided has fewer than its baseline: ratios pair the rounds
// both have. `rule`: how they are read (base/statistics.h).
ServerStats ComputeServerStats(const MeasuredRounds& row, const MeasuredRounds* baseline, const RatioRule& rule = {});

// The widest relative half-width of the ratios in `stats`, as a precision
// check needs it: a ratio without an interval counts as 1; a baseline's own
// (SelfRatio) and an absent one, as 0.
double WorstHalfWidth(std::span<const ServerStats> stats);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_SERVER_USAGE_H_
