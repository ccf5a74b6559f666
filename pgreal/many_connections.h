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

// Rows alike but for their clients (server, via, what-if, transport, hold),
// fewest clients first, and where their rate stopped growing.
struct SaturationSeries {
  std::vector<size_t> rows;
  // The first row whose next one was not faster (its conn/s ratio `~` or
  // `slower`): where the run saturated; none when every step was faster.
  std::optional<size_t> saturated_at;
  // At that row (or, not saturated, at the most clients), the busiest of
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
