// The statistics of a pg run's rows, computed once the rounds have ended and
// before any reporter runs: each row against its baseline (the row its key
// names with its one change undone, pgreal/target_key.h), paired within the
// rounds; the client's side; the server's own clock; what a row's profile
// changed against its baseline's.
#ifndef BACKENDLAB_PGREAL_PG_STATS_H_
#define BACKENDLAB_PGREAL_PG_STATS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/server_usage.h"
#include "base/statistics.h"
#include "base/summary.h"
#include "pgreal/setup_durations.h"
#include "pgreal/target_key.h"
#include "profiling/folded_diff.h"
#include "profiling/folded_stacks.h"

namespace backendlab::pgreal {

struct PgTargetResult;

// Each row's baseline: the row whose key is its key with its one change
// undone (pgreal/target_key.h BaselineOf, the run's first row's key as the
// first), found by a lookup; the row itself where it has no change or the
// run has no such row.
std::vector<size_t> BaselineIndices(std::span<const PgTargetResult> targets);

// Every target's rates and CPU per connection over the rounds, with their
// ratios to its baseline, paired within the rounds and read by `rule`
// (base/server_usage.h).
std::vector<ServerStats> ComputePgStats(std::span<const PgTargetResult> targets, const RatioRule& rule = {});

// The `vs base` cost and rate ratios of `stats` (ComputePgStats's) that
// are `~`, each row named by its label.
std::vector<UndecidedRatio> UndecidedOf(std::span<const PgTargetResult> targets, std::span<const ServerStats> stats);

// Which targets still need rounds: one with a `vs base` ratio undecided, or
// wider than `precision` (> 0), and its baseline; every target where the
// run has no ratio. What RunPg asks at each look.
std::vector<bool> PgNeeded(std::span<const PgTargetResult> targets, const RatioRule& rule, double precision);

// A row's client side over the rounds, and against its baseline's, paired
// within rounds (a baseline's own: SelfRatio).
struct ClientStats {
  MedianEstimate cpu_us;
  MedianEstimate connect_p50_us;
  std::optional<RatioEstimate> cpu_vs_baseline;      // lower is faster
  std::optional<RatioEstimate> connect_vs_baseline;  // lower is faster
};
std::vector<ClientStats> ComputeClientStats(std::span<const PgTargetResult> targets, const RatioRule& rule = {});

// The server's own clock of a target's connections beside the tool's.
struct ServerClock {
  bool timed = false;  // its server logged its set-up (PgTargetResult::logs_setup)
  SetupSummary server;  // milliseconds, over the measured connections' lines
  int64_t lines = 0;
  int64_t missing = 0;
  Summary connect_ms;   // the tool's connect latency over the same target's measured connections
  // With a profile (the first profiler's): the server CPU per connection
  // the tool attributes to the phases fork, auth (with scram: the server's
  // authentication spans both) and init, microseconds: each phase's share
  // of the server's samples times the median server CPU per connection of
  // the rounds; negative without a profile.
  double fork_cpu_us = -1;
  double auth_cpu_us = -1;
  double init_cpu_us = -1;
};
// Each target's server clock beside the tool's; `stats` ComputePgStats's.
std::vector<ServerClock> ComputeServerClocks(std::span<const PgTargetResult> targets,
                                             std::span<const ServerStats> stats);

// A phase of a row's profile against its baseline's, the same profiler's.
struct PhaseChange {
  std::string phase;  // every row of ServerProfile::phases, in order
  double baseline_percent = 0;  // of the server's samples
  double row_percent = 0;
  // Server CPU per connection the phase is given: its share of the samples
  // times the row's median server CPU per connection; negative when a row's
  // CPU was not counted.
  double baseline_us = -1;
  double row_us = -1;
};
struct ProfileChange {
  size_t target = 0;    // the row
  size_t baseline = 0;  // its baseline's row
  KeyPart undone = KeyPart::kWhatIf;  // what the row changes: a what-if, a transport, a hold, another server
  std::string profiler;
  std::vector<PhaseChange> phases;
  // The functions that left the profile: on at least kGoneSharePercent of
  // the baseline's backends' samples (anywhere on the stack), on none of
  // the row's. The baseline's figures, most total samples first.
  std::vector<profiling::FunctionSamples> gone;
  // Every stack of both, in server CPU per connection (a sample's share of
  // the server's samples times the row's median CPU per connection; us):
  // the differential flame graph, and the functions that grew and shrank
  // most. Per sample 0 where a row's CPU was not counted.
  profiling::FoldedDiff diff;
};
inline constexpr double kGoneSharePercent = 1.0;

// For every row with a profile whose baseline is another row with one (a
// what-if, a transport, connections held, another server), and each
// profiler both were recorded by: what changed, phase by phase, what left,
// and the difference stack by stack.
std::vector<ProfileChange> ComputeProfileChanges(std::span<const PgTargetResult> targets,
                                                 std::span<const ServerStats> stats);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_PG_STATS_H_
