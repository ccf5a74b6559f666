// The columns of a measured server, the same in every command that measures
// one (cycle, compare, pg, calibrate): one JSON key per figure — "the whole
// server's CPU per connection" is server_cpu_us wherever it is reported,
// its rounds rounds_server_cpu_us, its ratio server_cpu_us_vs_baseline —
// set from the statistics computed before any report (base/server_usage.h).
#ifndef BACKENDLAB_TOOLS_SERVER_COLUMNS_H_
#define BACKENDLAB_TOOLS_SERVER_COLUMNS_H_

#include <span>
#include <vector>

#include "base/server_usage.h"
#include "nlohmann/json.hpp"
#include "tools/report.h"

namespace backendlab::tools {

// The figure designs are compared on: the whole server's CPU per connection.
inline constexpr char kServerCpuKey[] = "server_cpu_us";

// Which of the server's columns the text table shows (JSON and CSV have all).
enum class ServerColumnsShown {
  kCostAndRate,  // CPU per connection and conn/s, with their ratios to the baseline
  kAll,          // and the postmaster's, the whole run's user/system, faults, switches, calls
};

// The server's columns, in the order a table shows them.
std::vector<Column> ServerColumns(ServerColumnsShown shown);

// A row's server cells: its statistics (their ratios held to `precision`,
// 0 for none) and its rounds (the whole-run figures from their sum).
void SetServerCells(Report::Row& row, const ServerStats& stats, std::span<const ServerUsage> rounds,
                    std::span<const double> rates, double precision);

// One server usage (a cycle's, a weighing's) per connection, under the
// same keys: server_cpu_us, server_user_us, ..., postmaster_cpu_us,
// ceiling_connections_per_second; not-counted figures null.
nlohmann::json ServerFiguresJson(const ServerUsage& usage);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_SERVER_COLUMNS_H_
