// Many connections: what a run's rows say once connections are held beside
// the loop (`pg --hold`) and once the clients grow (`--clients=1,2,4,...`):
// how the time to open the held ones grows with their number, what each
// held backend takes of memory, and where the rate stops growing against
// the postmaster's ceiling and what is busiest there. Computed once, before
// any reporter runs, from the rows' rounds (pg_run.h).
#ifndef BACKENDLAB_PGREAL_MANY_CONNECTIONS_H_
#define BACKENDLAB_PGREAL_MANY_CONNECTIONS_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/processes.h"
#include "base/server_usage.h"
#include "base/statistics.h"

namespace backendlab::pgreal {

struct PgTargetResult;

// A row's held connections over the rounds.
struct HoldStats {
  bool held = false;  // the row held connections and every round timed their opening
  MedianEstimate open_ms;                 // the time to open them, each round's
  MedianEstimate open_ms_per_connection;  // the same over their number
  // Opening's time per connection against the row of the same server,
  // transport and clients that held the fewest (more than none), paired in
  // the rounds: above 1 (`slower`), opening N took more than N times one
  // connection's share of the fewest: the time grows faster than linearly.
  std::optional<RatioEstimate> per_connection_vs_fewest;
  size_t fewest = 0;  // that row (itself for the fewest)
  // The held backends' memory: each figure the median over the rounds of
  // each round's median backend, kB; none where a round could not read it.
  std::optional<ProcessMemory> memory;
};
std::vector<HoldStats> ComputeHoldStats(std::span<const PgTargetResult> targets);

// What "busy" is measured against, the words a report and JSON use.
inline constexpr std::string_view kBoundPostmaster = "postmaster";  // its one core
inline constexpr std::string_view kBoundCpus = "cpus";              // every CPU of the machine
inline constexpr std::string_view kBoundClient = "client";          // the tool's loop, one thread on one core
// Busier than this, a resource is called the bound at a saturated row.
inline constexpr double kBusyBound = 0.8;

// Where a row stands: fractions from the medians of its rounds (conn/s and
// CPU per connection); negative where a figure was not counted.
struct Saturation {
  double postmaster_busy = -1;  // conn/s x the postmaster's CPU per connection, of one core
  double cpus_busy = -1;        // conn/s x (server + client CPU per connection), of all CPUs
  double client_busy = -1;      // conn/s x the client's CPU per connection, of one core
  // The row of its series at the next fewer clients, and conn/s against
  // it, paired in the rounds; none for the fewest.
  std::optional<size_t> previous;
  std::optional<RatioEstimate> rate_vs_previous;
};

// The most a step's conn/s may have grown for the run to call it no gain:
// saturation says more clients did not raise the rate, a claim that an
// interval covering 1 (`~`) does not make by itself (1.02 [0.907, 1.154]
// allows +15 %). A step counts as flat only where its interval's upper end
// is below this. 5 %: the tolerance the project's other "costs nothing"
// goals are held to (the server counters' and the built-in sampler's
// <= 5 % of conn/s, docs/pg.md).
inline constexpr double kSaturationMargin = 1.05;

// What a series of clients shows about its rate.
enum class SaturationFinding {
  kGrew,         // every step was `faster`: not saturated up to the most clients
  kSaturated,    // the first step not `faster` was under kSaturationMargin, and no later step was `faster`
  kNotResolved,  // that step allowed a gain of kSaturationMargin or more, or a later step was `faster` again
};

// Rows alike but for their clients (server, via, what-if, transport, hold),
// fewest clients first, and where their rate stopped growing.
struct SaturationSeries {
  std::vector<size_t> rows;
  SaturationFinding finding = SaturationFinding::kGrew;
  // The first row whose conn/s was not `faster` than the row before it
  // (`~`, `slower` or no interval); none when every step was faster.
  std::optional<size_t> first_not_faster;
  // Saturated: the row before first_not_faster, where the rate stopped
  // growing; none otherwise.
  std::optional<size_t> saturated_at;
  // Not resolved because of it: the first row after first_not_faster that
  // was `faster` than the row before it.
  std::optional<size_t> later_faster;
  // At saturated_at (otherwise at the most clients), the busiest of
  // kBoundPostmaster, kBoundCpus, kBoundClient if it was busier than
  // kBusyBound; "" otherwise.
  std::string bound;
};

struct SaturationReport {
  std::vector<Saturation> rows;  // one per target
  std::vector<SaturationSeries> series;  // only series of more than one clients entry
};
SaturationReport ComputeSaturation(std::span<const PgTargetResult> targets, std::span<const ServerStats> stats,
                                   int cpus);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_MANY_CONNECTIONS_H_
