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
#include "base/row_label.h"
#include "buffers/shared_buffers.h"
#include "tools/server_columns.h"

namespace backendlab::tools {
namespace {

using lifecycle::CompareConfig;
using lifecycle::CompareMatrix;
using lifecycle::CompareRowStats;
using lifecycle::CompareStats;

// The clients and hold columns are in the text where the run had more
// than one of them.
std::vector<Column> CompareColumns(bool clients_in_text, bool holds_in_text) {
  std::vector<Column> columns = {{"config", "config"},
                                 {"mode", ""},
                                 {"layout", ""},
                                 {"exit_check", ""},
                                 {"catcache", ""},
                                 {"syscache", ""},
                                 {"aa", ""},
                                 {"shared_buffers", "shared_buffers"},
                                 {"shared_buffers_bytes", ""},
                                 {"clients", clients_in_text ? "clients" : ""},
                                 {"hold", holds_in_text ? "hold" : ""}};
  for (Column& c : ServerColumns(ServerColumnsShown::kCostAndRate)) columns.push_back(std::move(c));
  for (Column c : std::initializer_list<Column>{
           {"vs_fork_floor", "x floor", 2},
           {"exit_check_us", "exit us", 1},
           {"exit_check_minor_faults", "exit faults", 0},
           {"exit_check_share", "exit % CPU", 1},
           {"exit_check_us_vs_baseline", "exit vs base", 2, ColumnKind::kRatio},
           // Against itself holding the fewest (--hold), and what the held ones took.
           {"server_cpu_us_vs_fewest_held", holds_in_text ? "CPU vs fewest held" : "", 2, ColumnKind::kRatio},
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
           {"rounds_exit_check_us", ""}}) {
    columns.push_back(std::move(c));
  }
  return columns;
}

// A ratio to the baseline; the baseline against itself is 1 by
// definition, with no interval to give.
Cell RatioOf(const std::optional<RatioEstimate>& r, bool is_baseline, double precision) {
  if (r) return EstimateOf(*r, precision);
  if (is_baseline) return 1.0;
  return std::monostate{};
}

// Where a row runs: its size, clients and hold.
void SetPlace(Report::Row& row, uint64_t bytes, int clients, int64_t hold) {
  row.Set("shared_buffers", buffers::FormatSize(bytes))
      .Set("shared_buffers_bytes", static_cast<int64_t>(bytes))
      .Set("clients", int64_t{clients})
      .Set("hold", hold);
}

}  // namespace

Report CompareReport(const CompareMatrix& matrix, const CompareStats& stats, std::span<const pgreal::PgTargetResult> targets) {
  Report report(CompareColumns(matrix.clients.size() > 1, matrix.holds.size() > 1));
  for (size_t i = 0; i < matrix.configs.size(); ++i) {
    const CompareConfig& c = matrix.configs[i];
    const lifecycle::CompareKey& k = c.key;
    const CompareRowStats& r = stats.mock[i];
    const lifecycle::CycleSummary& s = *r.summary;
    const lifecycle::PhaseStats& exit = s.phases[static_cast<int>(lifecycle::Phase::kExitCheck)];
    Report::Row row = report.NewRow();
    row.Set("config", c.label)
        .Set("mode", std::string(lifecycle::ModeName(k.mode)))
        .Set("layout", k.names[0])
        .Set("exit_check", k.names[1])
        .Set("catcache", k.names[2])
        .Set("syscache", k.names[3])
        .Set("aa", Boolean{k.aa});
    SetPlace(row, k.shared_buffers_bytes, k.clients, k.hold);
    SetServerCells(row, r.server, c.server_rounds, c.rates, stats.precision);
    const bool fewest = k.hold == matrix.holds.front();
    row.Set("vs_fork_floor", OptionalCell(r.vs_fork_floor))
        .Set("exit_check_us", exit.wall_us.median)
        .Set("exit_check_minor_faults", exit.minor_faults)
        .Set("exit_check_share", OptionalCell(r.exit_check_share_percent))
        .Set("exit_check_us_vs_baseline", Bucketed(RatioOf(r.exit_vs_baseline, r.is_baseline, 0)))  // of histogram medians
        .Set("server_cpu_us_vs_fewest_held", RatioOf(r.cpu_vs_fewest_held, fewest, 0))
        .Set("connections_per_second_vs_fewest_held", RatioOf(r.rate_vs_fewest_held, fewest, 0))
        .Set("hold_open_ms", r.hold_open_ms ? Cell(EstimateOf(*r.hold_open_ms)) : Cell(std::monostate{}))
        .Set("teardown_us", s.phases[static_cast<int>(lifecycle::Phase::kTeardown)].wall_us.median)
        .Set("reap_us", s.phases[static_cast<int>(lifecycle::Phase::kReap)].wall_us.median)
        .Set("backends_crashed", s.crashed)
        .Set("leaks_reported", s.leaks)
        .Set("rounds_exit_check_us", Values(c.exit_check_us));
    if (r.held_memory) {
      row.Set("held_private_kb", r.held_memory->private_kb)
          .Set("held_pss_kb", r.held_memory->pss_kb)
          .Set("held_rss_kb", r.held_memory->rss_kb)
          .Set("held_page_tables_kb", r.held_memory->page_tables_kb);
    }
    report.AddRow(std::move(row));
  }
  // A real server's phases are `pg --profile`'s: its exit columns stay empty.
  for (size_t i = 0; i < targets.size(); ++i) {
    const pgreal::PgTargetResult& t = targets[i];
    Report::Row row = report.NewRow();
    row.Set("config", t.key.ServerName()).Set("aa", Boolean{false});
    // At the hold it ran with (none: the servers beside the matrix hold no
    // connections), not the matrix's: PrintCompareNotes says so.
    SetPlace(row, static_cast<uint64_t>(t.key.shared_buffers_bytes), t.key.clients, t.key.hold);
    SetServerCells(row, stats.companions[i].server, t.server_rounds, t.rates, stats.precision);
    row.Set("vs_fork_floor", OptionalCell(stats.companions[i].vs_fork_floor));
    report.AddRow(std::move(row));
  }
  return report;
}

void PrintCompareNotes(const CompareMatrix& matrix, const CompareStats& stats, bool aa,
                       std::span<const pgreal::PgTargetResult> targets, std::ostream& out) {
  const bool one_clients = matrix.clients.size() == 1;
  out << "\nserver CPU us: the whole server's CPU (postmaster and backends, user and kernel) per connection;\n"
      << (one_clients ? absl::StrCat("conn/s with ", ClientsText(matrix.clients[0]), " in flight")
                      : std::string("conn/s with the row's clients in flight (1: one at a time; >= 2 x cores: saturation)"))
      << ". Both: median over the row's rounds, +-half its 95 % interval.\n"
         "vs base: the ratio to the baseline, "
      << matrix.baseline_label << (one_clients ? ", at the same shared_buffers" : ", at the same shared_buffers and clients")
      << ", paired within each round and\n"
         "summarised over rounds (geometric mean, t interval on the log ratios), then a verdict:\n"
      << VerdictLegend(stats.rule)
      << "x floor: conn/s over the bare fork+exit+wait rate measured in the same runs;\n"
         "exit: the exit check's median us, faults and share of a backend's CPU.\n";
  out << "exit vs base " << BucketedLegend() << ".\n";
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
  PrintDecisionNotes(stats.undecided, stats.rounds, stats.precision, stats.precise, stats.worst_half_width, out);
  if (aa) {
    const std::string family =
        absl::StrFormat("its %d cost and rate ratios held to 95 %% together, each at %.2f %%", stats.aa_ratios,
                        100 * stats.aa_confidence);
    if (stats.aa_failures.empty()) {
      out << "A/A: every " << matrix.baseline_label << "#2 came out same or ~ against " << matrix.baseline_label << " ("
          << family << "),\n  as it must.\n";
    } else {
      out << "A/A: " << absl::StrJoin(stats.aa_failures, ", ") << " differ from the same configuration (" << family
          << "):\n  the copies differ by more than their rounds' noise, so this run's intervals are too narrow;\n"
          << "  differences of this size elsewhere in this table are not resolved.\n";
    }
  }
  if (!targets.empty()) {
    out << targets[0].key.ServerName() << ": PostgreSQL " << targets[0].installation.version << " ("
        << targets[0].installation.build << "), a real server started by the tool, the same loop through libpq\n"
        << "  (backendlab pg measures it alone, with its server-side costs; pg --profile, its phases). Settings:";
    for (const auto& [name, value] : targets[0].settings) {
      if (name != "shared_buffers") out << " " << name << "=" << value;
    }
    out << "\n";
    // The servers beside the matrix hold none, whatever --hold lists: one
    // row each, at hold 0, against the baseline at the first hold.
    if (std::any_of(matrix.holds.begin(), matrix.holds.end(), [](int64_t h) { return h != 0; })) {
      out << targets[0].key.ServerName() << " holds no connections: its rows are at hold 0 only, each compared with "
          << matrix.baseline_label << " at hold " << matrix.holds.front()
          << " (pg --hold measures a real server holding them).\n";
    }
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
    if (matrix.clients.size() > 1) absl::StrAppend(&label, ", ", ClientsText(clients));
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
    add(targets[i].key.ServerName(), static_cast<uint64_t>(targets[i].key.shared_buffers_bytes), targets[i].key.clients,
        targets[i].key.hold, stats.companions[i]);
  }
  return chart;
}

}  // namespace backendlab::tools
