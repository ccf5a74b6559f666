// A pg run: its servers started (pgreal/pg_servers.h), measured in rounds of
// shuffled order until precise or out of time, profiled, stopped, and its
// statistics computed (pgreal/pg_stats.h).
#include "pgreal/pg_run.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/cpus.h"
#include "base/interleaved.h"
#include "base/scheduling.h"
#include "pgreal/pg_servers.h"

namespace backendlab::pgreal {

absl::StatusOr<PgRunOptions> ServersBeside(std::span<const int64_t> shared_buffers, std::span<const int> clients,
                                           const LoopOptions& loop, int64_t rounds) {
  if (shared_buffers.empty() || clients.empty()) {
    return absl::InvalidArgumentError("servers beside a matrix need its sizes and clients");
  }
  absl::StatusOr<Installation> installation = DefaultInstallation();
  if (!installation.ok()) return installation.status();
  PgRunOptions options;
  options.installations.push_back(*std::move(installation));
  options.shared_buffers.assign(shared_buffers.begin(), shared_buffers.end());
  options.clients.assign(clients.begin(), clients.end());
  // Room for the most clients, and for the checks the tool connects with.
  options.server.max_connections = *std::max_element(clients.begin(), clients.end()) + 5;
  options.loop = loop;
  options.loop.clients = clients.front();
  options.rounds = rounds;
  return options;
}

absl::StatusOr<PgResult> RunPg(const PgRunOptions& options) {
  // Before the servers start, so that they and their backends inherit it.
  const SchedulingHold scheduling(options.scheduling);
  absl::StatusOr<std::unique_ptr<PgServers>> servers = PgServers::Start(options);
  if (!servers.ok()) return servers.status();
  PgServers& pg = **servers;
  PreciseRun run;
  const std::vector<size_t> baselines = BaselineIndices(pg.targets());
  bool compared = false;
  for (size_t i = 0; i < baselines.size(); ++i) compared = compared || baselines[i] != i;
  const RatioRule rule{PerLookConfidence(LookRounds(options.rounds)), options.same_within};
  absl::Status status = RunUntilDecided(
      "pg", RoundPlan(options.rounds, options.seed), options.precision, pg.size(),
      [&](size_t i, int64_t) { return pg.Measure(i); },
      [&] { return PgNeeded(pg.targets(), rule, options.precision.half_width); }, run);
  if (status.ok() && !options.profilers.empty()) status = pg.Profile();
  absl::StatusOr<PgResult> result = pg.Finish();
  if (!status.ok()) return status;
  if (result.ok()) {
    result->run = run;
    result->scheduling = scheduling.outcome();
    result->compared = compared;
    result->rule = rule;
    result->stats = ComputePgStats(result->targets, rule);
    result->undecided = UndecidedOf(result->targets, result->stats);
    result->client_stats = ComputeClientStats(result->targets, rule);
    result->clocks = ComputeServerClocks(result->targets, result->stats);
    result->profile_changes = ComputeProfileChanges(result->targets, result->stats);
    result->holds = ComputeHoldStats(result->targets);
    result->saturation = ComputeSaturation(result->targets, result->stats, static_cast<int>(AllowedCpus().size()));
    result->worst_half_width = WorstHalfWidth(result->stats);
  }
  return result;
}

}  // namespace backendlab::pgreal
