// Medians and paired ratios of measured servers' rounds.
#include "base/server_usage.h"

#include <algorithm>
#include <vector>

namespace backendlab {

ServerStats ComputeServerStats(const MeasuredRounds& row, const MeasuredRounds* baseline, const RatioRule& rule) {
  ServerStats s;
  s.rate = MedianWithInterval(row.rates);
  const std::vector<double> cpu = CpuUsByRound(row.server);
  s.has_cpu = !cpu.empty() && std::all_of(cpu.begin(), cpu.end(), [](double v) { return v > 0; });
  if (s.has_cpu) s.cpu_us = MedianWithInterval(cpu);
  const std::vector<double> postmaster = PerRound(row.server, [](const PerConnection& p) { return p.postmaster_cpu_us; });
  s.has_postmaster_cpu =
      !postmaster.empty() && std::all_of(postmaster.begin(), postmaster.end(), [](double v) { return v > 0; });
  if (s.has_postmaster_cpu) {
    std::vector<double> ceilings;
    for (double us : postmaster) ceilings.push_back(CeilingOf(us));
    s.postmaster_cpu_us = MedianWithInterval(postmaster);
    s.ceiling = MedianWithInterval(ceilings);
  }
  if (baseline == nullptr) return s;
  if (baseline == &row) {
    s.rate_vs_baseline = SelfRatio(static_cast<int>(row.rates.size()));
    if (s.has_cpu) s.cpu_vs_baseline = SelfRatio(static_cast<int>(cpu.size()));
    return s;
  }
  s.rate_vs_baseline = PairedRatioOfCommonRounds(row.rates, baseline->rates, Better::kHigher, rule);
  if (s.has_cpu) {
    s.cpu_vs_baseline = PairedRatioOfCommonRounds(cpu, CpuUsByRound(baseline->server), Better::kLower, rule);
  }
  return s;
}

double WorstHalfWidth(std::span<const ServerStats> stats) {
  double widest = 0;
  auto widen = [&](const std::optional<RatioEstimate>& r) {
    if (!r || r->self) return;
    widest = std::max(widest, r->has_interval ? r->interval.RelativeHalfWidth(r->ratio) : 1.0);
  };
  for (const ServerStats& s : stats) {
    widen(s.rate_vs_baseline);
    widen(s.cpu_vs_baseline);
  }
  return widest;
}

}  // namespace backendlab
