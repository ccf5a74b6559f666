// A measured server's columns and their cells, one key per figure.
#include "tools/server_columns.h"

namespace backendlab::tools {
namespace {

// A per-connection figure; -1 (not counted) is a missing value.
Cell Counted(double value) { return value < 0 ? Cell{} : Cell{value}; }

nlohmann::json CountedJson(double value) { return value < 0 ? nlohmann::json(nullptr) : nlohmann::json(value); }

}  // namespace

std::vector<Column> ServerColumns(ServerColumnsShown shown) {
  const bool all = shown == ServerColumnsShown::kAll;
  auto text = [&](const char* heading) { return all ? std::string(heading) : std::string(); };
  return {{"rounds", "rounds"},  // the row's own: fewer where it left the rounds once decided
          {"connections_per_second", "conn/s", 0, ColumnKind::kMedian},
          {"connections_per_second_vs_baseline", "conn/s vs base", 2, ColumnKind::kRatio},
          {kServerCpuKey, "server CPU us", 0, ColumnKind::kMedian},
          {"server_cpu_us_vs_baseline", "CPU vs base", 2, ColumnKind::kRatio},
          // The postmaster's own share, and the conn/s it caps a server at.
          {"postmaster_cpu_us", text("postmaster us"), 1, ColumnKind::kMedian},
          {"ceiling_connections_per_second", text("ceiling conn/s"), 0, ColumnKind::kMedian},
          // The whole run's, per connection.
          {"server_task_clock_us", text("task-clock us")},
          {"server_user_us", text("user")},
          {"server_system_us", text("sys")},
          {"server_minor_faults", text("minor")},
          {"server_major_faults", text("major"), 2},
          {"server_context_switches", text("ctx sw")},
          {"server_syscalls", text("syscalls")},
          // Each round's figures, in round order, for a reader to pair again.
          {"rounds_server_cpu_us", ""},
          {"rounds_connections_per_second", ""},
          {"rounds_postmaster_cpu_us", ""}};
}

void SetServerCells(Report::Row& row, const ServerStats& st, std::span<const ServerUsage> rounds,
                    std::span<const double> rates, double precision) {
  row.Set("rounds", static_cast<int64_t>(rates.size()))
      .Set("connections_per_second", EstimateOf(st.rate))
      .Set("connections_per_second_vs_baseline", RatioCell(st.rate_vs_baseline, precision))
      .Set(kServerCpuKey, st.has_cpu ? Cell{EstimateOf(st.cpu_us)} : Cell{})
      .Set("server_cpu_us_vs_baseline", st.has_cpu ? RatioCell(st.cpu_vs_baseline, precision) : Cell{})
      .Set("postmaster_cpu_us", st.has_postmaster_cpu ? Cell{EstimateOf(st.postmaster_cpu_us)} : Cell{})
      .Set("ceiling_connections_per_second", st.has_postmaster_cpu ? Cell{EstimateOf(st.ceiling)} : Cell{})
      .Set("rounds_server_cpu_us", Values(CpuUsByRound(rounds)))
      .Set("rounds_connections_per_second", Values(rates.begin(), rates.end()))
      .Set("rounds_postmaster_cpu_us",
           Values(PerRound(rounds, [](const PerConnection& p) { return p.postmaster_cpu_us; })));
  if (rounds.empty()) return;
  const PerConnection per = PerConnectionOf(Merged(rounds));
  row.Set("server_task_clock_us", Counted(per.task_clock_us))
      .Set("server_user_us", Counted(per.user_us))
      .Set("server_system_us", Counted(per.system_us))
      .Set("server_minor_faults", Counted(per.minor_faults))
      .Set("server_major_faults", Counted(per.major_faults))
      .Set("server_context_switches", Counted(per.context_switches))
      .Set("server_syscalls", Counted(per.syscalls));
}

nlohmann::json ServerFiguresJson(const ServerUsage& usage) {
  const PerConnection per = PerConnectionOf(usage);
  return {{"connections", usage.connections},
          {kServerCpuKey, per.cpu_us},
          {"server_user_us", CountedJson(per.user_us)},
          {"server_system_us", CountedJson(per.system_us)},
          {"server_task_clock_us", CountedJson(per.task_clock_us)},
          {"server_minor_faults", per.minor_faults},
          {"server_major_faults", per.major_faults},
          {"server_context_switches", CountedJson(per.context_switches)},
          {"server_syscalls", CountedJson(per.syscalls)},
          {"postmaster_cpu_us", per.postmaster_cpu_us > 0 ? nlohmann::json(per.postmaster_cpu_us) : nlohmann::json(nullptr)},
          {"ceiling_connections_per_second",
           per.postmaster_cpu_us > 0 ? nlohmann::json(CeilingOf(per.postmaster_cpu_us)) : nlohmann::json(nullptr)}};
}

}  // namespace backendlab::tools
