// Held connections' growth and memory, and the rows against the
// postmaster's ceiling, from the rounds of a pg run.
#include "pgreal/many_connections.h"

#include <algorithm>

#include "pgreal/pg_run.h"

namespace backendlab::pgreal {
namespace {

std::vector<double> PerConnection(const PgTargetResult& t) {
  std::vector<double> v;
  for (double ms : t.hold_open_ms) v.push_back(ms / static_cast<double>(t.key.hold));
  return v;
}

}  // namespace

std::vector<HoldStats> ComputeHoldStats(std::span<const PgTargetResult> targets) {
  std::vector<HoldStats> stats(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    const PgTargetResult& t = targets[i];
    HoldStats& h = stats[i];
    if (t.key.hold == 0 || t.hold_open_ms.empty() || t.hold_open_ms.size() != t.rates.size()) continue;
    h.held = true;
    h.open_ms = MedianWithInterval(t.hold_open_ms);
    const std::vector<double> per = PerConnection(t);
    h.open_ms_per_connection = MedianWithInterval(per);
    h.fewest = i;
    for (size_t j = 0; j < targets.size(); ++j) {
      const PgTargetResult& d = targets[j];
      // The same row holding another number of connections: the same key but for its hold.
      if (d.key.hold > 0 && d.key.hold < targets[h.fewest].key.hold && d.key.WithHold(t.key.hold) == t.key &&
          d.hold_open_ms.size() == d.rates.size()) {
        h.fewest = j;
      }
    }
    if (h.fewest == i) {
      h.per_connection_vs_fewest = SelfRatio(static_cast<int>(per.size()));
    } else {
      h.per_connection_vs_fewest = PairedRatioOfCommonRounds(per, PerConnection(targets[h.fewest]), Better::kLower);
    }
    if (!t.held_memory.empty() && t.held_memory.size() == t.rates.size()) {
      h.memory = MedianMemory(t.held_memory);
    }
  }
  return stats;
}

SaturationReport ComputeSaturation(std::span<const PgTargetResult> targets, std::span<const ServerStats> stats,
                                   int cpus) {
  SaturationReport report;
  report.rows.resize(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    const PgTargetResult& t = targets[i];
    const ServerStats& st = stats[i];
    Saturation& s = report.rows[i];
    const double rate = st.rate.median;
    if (rate <= 0) continue;
    const double client_us =
        t.loop.connections > 0 ? static_cast<double>(t.loop.client.cpu_ns) / 1e3 / static_cast<double>(t.loop.connections) : -1;
    if (st.has_postmaster_cpu) {
      s.postmaster_busy = rate * st.postmaster_cpu_us.median / 1e6;
    }
    if (client_us >= 0) s.client_busy = rate * client_us / 1e6;
    if (st.has_cpu && client_us >= 0 && cpus > 0) s.cpus_busy = rate * (st.cpu_us.median + client_us) / 1e6 / cpus;
  }
  std::vector<bool> placed(targets.size(), false);
  for (size_t i = 0; i < targets.size(); ++i) {
    if (placed[i]) continue;
    SaturationSeries series;
    for (size_t j = i; j < targets.size(); ++j) {
      // The same row at other clients: the same key but for its clients.
      if (!placed[j] && targets[j].key.WithClients(targets[i].key.clients) == targets[i].key) {
        series.rows.push_back(j);
        placed[j] = true;
      }
    }
    if (series.rows.size() < 2) continue;
    std::sort(series.rows.begin(), series.rows.end(),
              [&](size_t a, size_t b) { return targets[a].key.clients < targets[b].key.clients; });
    for (size_t k = 1; k < series.rows.size(); ++k) {
      Saturation& s = report.rows[series.rows[k]];
      s.previous = series.rows[k - 1];
      s.rate_vs_previous =
          PairedRatioOfCommonRounds(targets[series.rows[k]].rates, targets[series.rows[k - 1]].rates, Better::kHigher);
      const bool faster = s.rate_vs_previous && s.rate_vs_previous->verdict == Verdict::kFaster;
      if (!series.first_not_faster && !faster) {
        series.first_not_faster = series.rows[k];
        // Flat only where a gain of the margin is ruled out.
        const bool flat = s.rate_vs_previous && s.rate_vs_previous->has_interval &&
                          s.rate_vs_previous->interval.high < kSaturationMargin;
        series.finding = flat ? SaturationFinding::kSaturated : SaturationFinding::kNotResolved;
        if (flat) series.saturated_at = series.rows[k - 1];
      } else if (series.first_not_faster && faster && !series.later_faster) {
        series.later_faster = series.rows[k];
        series.finding = SaturationFinding::kNotResolved;
        series.saturated_at.reset();
      }
    }
    {
      const Saturation& at = report.rows[series.saturated_at.value_or(series.rows.back())];
      double busiest = kBusyBound;
      for (auto [busy, name] : {std::pair{at.postmaster_busy, kBoundPostmaster}, std::pair{at.cpus_busy, kBoundCpus},
                                std::pair{at.client_busy, kBoundClient}}) {
        if (busy > busiest) {
          busiest = busy;
          series.bound = std::string(name);
        }
      }
    }
    report.series.push_back(std::move(series));
  }
  return report;
}

}  // namespace backendlab::pgreal
