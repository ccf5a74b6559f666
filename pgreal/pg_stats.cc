// The statistics of a pg run's rows: each against its baseline, paired in
// the rounds; the client's side; the server's own clock; profile changes.
#include "pgreal/pg_stats.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "pgreal/pg_run.h"
#include "pgreal/phase_rules.h"

namespace backendlab::pgreal {

std::vector<size_t> BaselineIndices(std::span<const PgTargetResult> targets) {
  absl::flat_hash_map<TargetKey, size_t> index;
  for (size_t i = 0; i < targets.size(); ++i) index.try_emplace(targets[i].key, i);
  std::vector<size_t> baselines;
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::optional<Baseline> b = BaselineOf(targets[i].key, targets.front().key);
    const auto found = b ? index.find(b->key) : index.end();
    baselines.push_back(found != index.end() ? found->second : i);
  }
  return baselines;
}

std::vector<ServerStats> ComputePgStats(std::span<const PgTargetResult> targets, const RatioRule& rule) {
  std::vector<MeasuredRounds> rounds;
  for (const PgTargetResult& t : targets) rounds.push_back({t.rates, t.server_rounds});
  const std::vector<size_t> baselines = BaselineIndices(targets);
  std::vector<ServerStats> stats;
  for (size_t i = 0; i < rounds.size(); ++i) stats.push_back(ComputeServerStats(rounds[i], &rounds[baselines[i]], rule));
  return stats;
}

namespace {

// Each target's `vs base` cost and rate ratios, with their column's key:
// none for a target that is its own baseline.
template <typename F>
void ForEachRatio(std::span<const ServerStats> stats, F f) {
  for (size_t i = 0; i < stats.size(); ++i) {
    for (const auto& [figure, r] : {std::pair{"connections_per_second_vs_baseline", &stats[i].rate_vs_baseline},
                                    std::pair{"server_cpu_us_vs_baseline", &stats[i].cpu_vs_baseline}}) {
      if (*r && !(*r)->self) f(i, figure, **r);
    }
  }
}

}  // namespace

std::vector<UndecidedRatio> UndecidedOf(std::span<const PgTargetResult> targets, std::span<const ServerStats> stats) {
  std::vector<UndecidedRatio> undecided;
  ForEachRatio(stats, [&](size_t i, const char* figure, const RatioEstimate& r) {
    if (!Decided(r)) undecided.push_back({targets[i].label, figure, r});
  });
  return undecided;
}

std::vector<bool> PgNeeded(std::span<const PgTargetResult> targets, const RatioRule& rule, double precision) {
  const std::vector<ServerStats> stats = ComputePgStats(targets, rule);
  const std::vector<size_t> baselines = BaselineIndices(targets);
  bool any = false;
  std::vector<bool> needed(targets.size(), false);
  ForEachRatio(stats, [&](size_t i, const char*, const RatioEstimate& r) {
    any = true;
    const bool precise = precision <= 0 || (r.has_interval && r.interval.RelativeHalfWidth(r.ratio) <= precision);
    if (Decided(r) && precise) return;
    needed[i] = true;
    needed[baselines[i]] = true;
  });
  if (!any) needed.assign(targets.size(), true);
  return needed;
}

std::vector<ClientStats> ComputeClientStats(std::span<const PgTargetResult> targets, const RatioRule& rule) {
  const std::vector<size_t> baselines = BaselineIndices(targets);
  std::vector<ClientStats> stats;
  for (size_t i = 0; i < targets.size(); ++i) {
    const PgTargetResult& t = targets[i];
    ClientStats c;
    c.cpu_us = MedianWithInterval(t.client_cpu_us);
    c.connect_p50_us = MedianWithInterval(t.connect_p50_us);
    const size_t b = baselines[i];
    if (b == i) {
      c.cpu_vs_baseline = c.connect_vs_baseline = SelfRatio(static_cast<int>(t.rates.size()));
    } else {
      c.cpu_vs_baseline = PairedRatioOfCommonRounds(t.client_cpu_us, targets[b].client_cpu_us, Better::kLower, rule);
      c.connect_vs_baseline =
          PairedRatioOfCommonRounds(t.connect_p50_us, targets[b].connect_p50_us, Better::kLower, rule);
    }
    stats.push_back(c);
  }
  return stats;
}

namespace {

template <typename Phase>
double SharePercent(const ServerProfile& p, Phase phase) {
  return 100.0 * static_cast<double>(p.SamplesIn(phase)) / static_cast<double>(p.server_samples);
}

}  // namespace

std::vector<ServerClock> ComputeServerClocks(std::span<const PgTargetResult> targets,
                                             std::span<const ServerStats> stats) {
  std::vector<ServerClock> clocks;
  for (size_t i = 0; i < targets.size(); ++i) {
    const PgTargetResult& t = targets[i];
    ServerClock c;
    c.timed = t.logs_setup;
    c.connect_ms = t.loop.connect_ns.Summarize(1e-6);
    if (t.logs_setup) {
      c.server = SummarizeSetupDurations(t.setup);
      c.lines = static_cast<int64_t>(t.setup.size());
      c.missing = t.setup_missing;
    }
    if (!t.profiles.empty() && t.profiles[0].server_samples > 0 && i < stats.size() && stats[i].has_cpu) {
      const ServerProfile& p = t.profiles[0];
      auto share_us = [&](RealPhase phase) { return stats[i].cpu_us.median * SharePercent(p, phase) / 100; };
      c.fork_cpu_us = share_us(RealPhase::kFork);
      // The server's `authentication` spans ClientAuthentication, the
      // password exchange inside it too.
      c.auth_cpu_us = share_us(RealPhase::kAuth) + share_us(RealPhase::kScram);
      c.init_cpu_us = share_us(RealPhase::kInit);
    }
    clocks.push_back(c);
  }
  return clocks;
}

namespace {

// The functions on at least kGoneSharePercent of `baseline`'s backends'
// samples and on none of `row`'s, most total samples first.
std::vector<profiling::FunctionSamples> Gone(const ServerProfile& baseline, const ServerProfile& row) {
  absl::flat_hash_set<std::string> present;
  for (const profiling::FunctionSamples& f : row.stacks.Under(kBackendRole).TopN(std::numeric_limits<size_t>::max())) {
    present.insert(f.name);
  }
  std::vector<profiling::FunctionSamples> gone;
  for (profiling::FunctionSamples& f : baseline.stacks.Under(kBackendRole).TopN(std::numeric_limits<size_t>::max())) {
    if (f.total_percent >= kGoneSharePercent && !present.contains(f.name)) gone.push_back(std::move(f));
  }
  std::sort(gone.begin(), gone.end(), [](const profiling::FunctionSamples& x, const profiling::FunctionSamples& y) {
    return x.total != y.total ? x.total > y.total : x.name < y.name;
  });
  return gone;
}

}  // namespace

std::vector<ProfileChange> ComputeProfileChanges(std::span<const PgTargetResult> targets,
                                                 std::span<const ServerStats> stats) {
  const std::vector<size_t> baselines = BaselineIndices(targets);
  // Server CPU per connection of a share of a row's samples; -1 uncounted.
  auto us = [&](size_t row, double share_percent) {
    return row < stats.size() && stats[row].has_cpu ? stats[row].cpu_us.median * share_percent / 100 : -1.0;
  };
  std::vector<ProfileChange> changes;
  for (size_t i = 0; i < targets.size(); ++i) {
    const size_t b = baselines[i];
    if (b == i || targets[i].key.via) continue;
    const std::optional<Baseline> undone = BaselineOf(targets[i].key, targets.front().key);
    for (const ServerProfile& changed : targets[i].profiles) {
      const auto base = std::find_if(targets[b].profiles.begin(), targets[b].profiles.end(),
                                     [&](const ServerProfile& p) { return p.profiler == changed.profiler; });
      if (base == targets[b].profiles.end() || base->server_samples == 0 || changed.server_samples == 0) continue;
      ProfileChange c;
      c.target = i;
      c.baseline = b;
      c.undone = undone->undone;
      c.profiler = changed.profiler;
      for (const PhaseSamples& row : base->phases) {
        PhaseChange pc;
        pc.phase = row.phase;
        pc.baseline_percent = SharePercent(*base, row.phase);
        pc.row_percent = SharePercent(changed, row.phase);
        pc.baseline_us = us(b, pc.baseline_percent);
        pc.row_us = us(i, pc.row_percent);
        c.phases.push_back(std::move(pc));
      }
      c.gone = Gone(*base, changed);
      auto per_sample = [&](size_t row, const ServerProfile& p) {
        return std::max(0.0, us(row, 100)) / static_cast<double>(p.server_samples);
      };
      c.diff = profiling::FoldedDiff::Of({&base->stacks, per_sample(b, *base), targets[b].label},
                                         {&changed.stacks, per_sample(i, changed), targets[i].label},
                                         "us of server CPU per connection");
      changes.push_back(std::move(c));
    }
  }
  return changes;
}

}  // namespace backendlab::pgreal
