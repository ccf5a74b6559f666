// `compare`'s table, notes and chart.
#include "tools/compare_report.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "buffers/shared_buffers.h"

namespace backendlab::tools {
namespace {

using lifecycle::CompareConfig;
using lifecycle::CompareMatrix;
using lifecycle::CompareRowStats;
using lifecycle::CompareStats;

// The clients and hold columns are in the text where the run had more
// than one of them.
std::vector<Column> CompareColumns(bool clients_in_text, bool holds_in_text) {
  return {{"config", "config"},
          {"mode", ""},
          {"layout", ""},
          {"exit_check", ""},
          {"catcache", ""},
          {"syscache", ""},
          {"aa", ""},
          {"shared_buffers", "shared_buffers"},
          {"shared_buffers_bytes", ""},
          {"clients", clients_in_text ? "clients" : ""},
          {"hold", holds_in_text ? "hold" : ""},
          {"cpu_us_per_connection", "CPU us/conn", 0, ColumnKind::kMedian},
          {"cpu_us_per_connection_vs_baseline", "CPU vs base", 2, ColumnKind::kRatio},
          {"connections_per_second", "conn/s", 0, ColumnKind::kMedian},
          {"connections_per_second_vs_baseline", "conn/s vs base", 2, ColumnKind::kRatio},
          {"vs_fork_floor", "x floor", 2},
          {"exit_check_us", "exit us", 1},
          {"exit_check_minor_faults", "exit faults", 0},
          {"exit_check_share", "exit % CPU", 1},
          {"exit_check_us_vs_baseline", "exit vs base", 2, ColumnKind::kRatio},
          // Against itself holding the fewest (--hold), and what the held ones took.
          {"cpu_us_per_connection_vs_fewest_held", holds_in_text ? "CPU vs fewest held" : "", 2, ColumnKind::kRatio},
          {"connections_per_second_vs_fewest_held", "", 2, ColumnKind::kRatio},
          {"hold_open_ms", "", 1, ColumnKind::kMedian},
          {"held_private_kb", ""},
          {"held_pss_kb", ""},
          {"held_rss_kb", ""},
          {"held_page_tables_kb", ""},
          {"teardown_us", "", 1},
          {"reap_us", "", 1},
          {"backends_crashed", ""},
          {"leaks_reported", ""},
          // Each round's figures, in round order, for a reader to pair again.
          {"rounds_cpu_us_per_connection", ""},
          {"rounds_connections_per_second", ""},
          {"rounds_exit_check_us", ""}};
}

// A ratio to the baseline; the baseline against itself is 1 by
// definition, with no interval to give.
Cell RatioOf(const std::optional<RatioEstimate>& r, bool is_baseline, double precision) {
  if (r) return EstimateOf(*r, precision);
  if (is_baseline) return 1.0;
  return std::monostate{};
}


// The cells every row starts with: names, A/A, size, clients, cost and
// rate with their ratios, x floor.
std::vector<Cell> LeadingCells(const std::array<std::string, 6>& names, bool aa, uint64_t bytes, int clients,
                               int64_t hold, const CompareRowStats& r, double precision) {
  std::vector<Cell> row;
  for (const std::string& text : names) row.emplace_back(std::in_place_type<std::string>, text);
  row.push_back(Boolean{aa});
  row.emplace_back(std::in_place_type<std::string>, buffers::FormatSize(bytes));
  row.push_back(static_cast<int64_t>(bytes));
  row.push_back(static_cast<int64_t>(clients));
  row.push_back(hold);
  const ServerStats& s = r.server;
  row.push_back(s.has_cpu ? Cell(EstimateOf(s.cpu_us)) : Cell(std::monostate{}));
  row.push_back(s.has_cpu ? RatioOf(s.cpu_vs_baseline, r.is_baseline, precision) : Cell(std::monostate{}));
  row.push_back(EstimateOf(s.rate));
  row.push_back(RatioOf(s.rate_vs_baseline, r.is_baseline, precision));
  row.push_back(OptionalCell(r.vs_fork_floor));
  return row;
}

}  // namespace

Report CompareReport(const CompareMatrix& matrix, const CompareStats& stats, std::span<const pgreal::PgTargetResult> targets) {
  const std::vector<Column> columns = CompareColumns(matrix.clients.size() > 1, matrix.holds.size() > 1);
  Report report(columns);
  for (size_t i = 0; i < matrix.configs.size(); ++i) {
    const CompareConfig& c = matrix.configs[i];
    const CompareRowStats& r = stats.mock[i];
    const lifecycle::CycleSummary& s = *r.summary;
    const lifecycle::PhaseStats& exit = s.phases[static_cast<int>(lifecycle::Phase::kExitCheck)];
    std::vector<Cell> row = LeadingCells({c.label, std::string(lifecycle::ModeName(c.options.mode)), c.names[0], c.names[1],
                                          c.names[2], c.names[3]},
                                         c.aa,
                                         c.options.backend.shared_buffers.bytes, c.options.clients, c.options.hold, r,
                                         stats.precision);
    row.push_back(exit.wall_us.median);
    row.push_back(exit.minor_faults);
    row.push_back(OptionalCell(r.exit_check_share_percent));
    row.push_back(RatioOf(r.exit_vs_baseline, r.is_baseline, 0));
    const bool fewest = c.options.hold == matrix.holds.front();
    row.push_back(RatioOf(r.cpu_vs_fewest_held, fewest, 0));
    row.push_back(RatioOf(r.rate_vs_fewest_held, fewest, 0));
    row.push_back(r.hold_open_ms ? Cell(EstimateOf(*r.hold_open_ms)) : Cell(std::monostate{}));
    for (int64_t ProcessMemory::*field : {&ProcessMemory::private_kb, &ProcessMemory::pss_kb, &ProcessMemory::rss_kb,
                                          &ProcessMemory::page_tables_kb}) {
      row.push_back(r.held_memory ? Cell((*r.held_memory).*field) : Cell(std::monostate{}));
    }
    row.push_back(s.phases[static_cast<int>(lifecycle::Phase::kTeardown)].wall_us.median);
    row.push_back(s.phases[static_cast<int>(lifecycle::Phase::kReap)].wall_us.median);
    row.push_back(s.crashed);
    row.push_back(s.leaks);
    row.push_back(Values(CpuUsByRound(c.server_rounds)));
    row.push_back(Values(c.rates));
    row.push_back(Values(c.exit_check_us));
    report.AddRow(std::move(row));
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    const pgreal::PgTargetResult& t = targets[i];
    std::vector<Cell> row = LeadingCells({pgreal::ServerName(t), "", "", "", "", ""}, false,
                                         static_cast<uint64_t>(t.shared_buffers_bytes), t.clients, matrix.holds.front(),
                                         stats.companions[i], stats.precision);
    // A real backend's phases are `pg --profile`'s: the exit columns stay empty.
    for (size_t k = row.size(); k + 3 < columns.size(); ++k) row.push_back(std::monostate{});
    row.push_back(Values(CpuUsByRound(t.server_rounds)));
    row.push_back(Values(t.rates));
    row.push_back(std::monostate{});
    report.AddRow(std::move(row));
  }
  return report;
}

void PrintCompareNotes(const CompareMatrix& matrix, const CompareStats& stats, bool aa,
                       std::span<const pgreal::PgTargetResult> targets, std::ostream& out) {
  const bool one_clients = matrix.clients.size() == 1;
  out << "\nCPU us/conn: the whole server's CPU (postmaster and backends, user and kernel) per connection;\n"
      << (one_clients ? absl::StrCat("conn/s with ", lifecycle::ClientsText(matrix.clients[0]), " in flight")
                      : std::string("conn/s with the row's clients in flight (1: one at a time; >= 2 x cores: saturation)"))
      << ". Both: median over rounds, +-half its 95 % interval.\n"
         "vs base: the ratio to the baseline, "
      << matrix.baseline_label << (one_clients ? ", at the same shared_buffers" : ", at the same shared_buffers and clients")
      << ", paired within each round and\n"
         "summarised over rounds (geometric mean, 95 % t interval on the log ratios), then a verdict:\n"
         "faster or slower where the interval excludes 1, ~ where it covers 1 (no difference this run\n"
         "can resolve). x floor: conn/s over the bare fork+exit+wait rate measured in the same runs;\n"
         "exit: the exit check's median us, faults and share of a backend's CPU.\n";
  if (matrix.modes.size() > 1) {
    out << "modes: a " << lifecycle::ModeName(matrix.modes.front())
        << " row's vs base is against " << matrix.baseline_label
        << "; every other mode's row is against the same configuration in " << lifecycle::ModeName(matrix.modes.front())
        << " mode,\nat the same shared_buffers"
        << (one_clients ? "" : " and clients")
        << ": what that process model saves.";
    if (std::find(matrix.modes.begin(), matrix.modes.end(), lifecycle::Mode::kThread) != matrix.modes.end()) {
      out << " A thread's fork and reap are thread_start and thread_join.";
    }
    if (std::find(matrix.modes.begin(), matrix.modes.end(), lifecycle::Mode::kPrefork) != matrix.modes.end()) {
      out << " A pre-forked backend's fork, teardown and reap are\nhandoff, reset and release; its first connection builds what later ones reuse.";
    }
    out << "\n";
  }
  if (matrix.holds.size() > 1) {
    out << "hold: connections held, idle, beside each run (their backends' lives in no figure of the run's);\n"
           "CPU vs fewest held: the row's cost over the same configuration's holding "
        << matrix.holds.front() << ", paired within rounds.\n";
  }
  if (stats.precision > 0) {
    out << absl::StrFormat("precision: every cost and rate ratio within +-%.3g %% ", 100 * stats.precision)
        << (stats.precise ? "reached" : "NOT reached")
        << absl::StrFormat(" after %d rounds (widest +-%.1f %%)", stats.rounds, 100 * stats.worst_half_width);
    if (!stats.precise) out << "; * marks each ratio short of it (raise --max-time or --connections)";
    out << "\n";
  }
  if (aa) {
    const std::string family =
        absl::StrFormat("its %d cost and rate ratios held to 95 %% together, each at %.2f %%", stats.aa_ratios,
                        100 * stats.aa_confidence);
    if (stats.aa_failures.empty()) {
      out << "A/A: every " << matrix.baseline_label << "#2 came out ~ against " << matrix.baseline_label << " (" << family
          << "),\n  as it must.\n";
    } else {
      out << "A/A: " << absl::StrJoin(stats.aa_failures, ", ") << " differ from the same configuration (" << family
          << "):\n  this machine was too noisy for the precision asked; a difference of that size elsewhere in this table\n"
          << "  is not resolved.\n";
    }
  }
  if (!targets.empty()) {
    out << pgreal::ServerName(targets[0]) << ": PostgreSQL " << targets[0].installation.version << " ("
        << targets[0].installation.build << "), a real server started by the tool, the same loop through libpq\n"
        << "  (backendlab pg measures it alone, with its server-side costs; pg --profile, its phases). Settings:";
    for (const auto& [name, value] : targets[0].settings) {
      if (name != "shared_buffers") out << " " << name << "=" << value;
    }
    out << "\n";
  }
  if (!kAssertChecking) {
    out << "exit-check assert: compiled out of this build (no assert checking), as in a PostgreSQL >= 9.1 release build.\n";
  }
}

LineChart CostChart(const CompareMatrix& matrix, const CompareStats& stats, std::span<const pgreal::PgTargetResult> targets) {
  LineChart chart{"backendlab compare: CPU per connection of the whole server (us, median of rounds)", "shared_buffers",
                  "us",
                  {},
                  {}};
  const std::vector<buffers::SharedBuffers>& sizes = matrix.sizes;
  for (const buffers::SharedBuffers& s : sizes) chart.x_positions.push_back(buffers::FormatSize(s.bytes));
  auto add = [&](std::string label, uint64_t bytes, int clients, int64_t hold, const CompareRowStats& r) {
    if (matrix.clients.size() > 1) absl::StrAppend(&label, ", ", lifecycle::ClientsText(clients));
    if (matrix.holds.size() > 1) absl::StrAppend(&label, ", hold ", hold);
    auto series = std::find_if(chart.series.begin(), chart.series.end(), [&](const ChartSeries& s) { return s.name == label; });
    if (series == chart.series.end()) series = chart.series.insert(series, {label, std::vector<std::optional<double>>(sizes.size())});
    const size_t x = static_cast<size_t>(
        std::find_if(sizes.begin(), sizes.end(), [&](const buffers::SharedBuffers& s) { return s.bytes == bytes; }) -
        sizes.begin());
    if (r.server.has_cpu && x < sizes.size()) series->values[x] = r.server.cpu_us.median;
  };
  for (size_t i = 0; i < matrix.configs.size(); ++i) {
    const CompareConfig& c = matrix.configs[i];
    add(c.label, c.options.backend.shared_buffers.bytes, c.options.clients, c.options.hold, stats.mock[i]);
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    add(pgreal::ServerName(targets[i]), static_cast<uint64_t>(targets[i].shared_buffers_bytes), targets[i].clients,
        matrix.holds.front(), stats.companions[i]);
  }
  return chart;
}

}  // namespace backendlab::tools
