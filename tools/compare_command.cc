// `backendlab compare`: a matrix of configurations (layout x exit-check x
// shared_buffers x catcache x syscache), each run by lifecycle::RunCycle once
// per round, in an order shuffled each round, so that drift on a shared machine hits every
// configuration alike; one table with ratios against a baseline, and a chart.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/line_chart.h"
#include "buffers/exit_check.h"
#include "buffers/shared_buffers.h"
#include "catcache/bucket_allocator.h"
#include "lifecycle/cycle_summary.h"
#include "pgreal/installation.h"
#include "pgreal/pg_run.h"
#include "tools/compare_matrix.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/cycle_report.h"
#include "base/interleaved.h"
#include "tools/machine_header.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kFlags[] = {
    {"layouts", "array,bytes,hash", "refcount table layouts"},
    {"exit-checks", "always,assert", "exit-check policies"},
    {"kernel", "simd", "how the exit check scans array and bytes: naive (9.0's loop), word or simd"},
    {"shared-buffers", "128MB,1GB,8GB", "shared_buffers sizes"},
    {"catcaches", "palloc0", "catcache bucket strategies"},
    {"syscaches", "pg17", "syscache profiles: pg90, pg17"},
    {"mode", "fork", "fork or inproc"},
    {"clients", "1", "concurrent clients"},
    {"connections", "300", "measured connections per configuration, split over the rounds"},
    {"rounds", "3", "interleaved rounds"},
    {"warmup", "5", "warm-up connections per configuration and round"},
    {"work-pins", "20", "pin+unpin pairs per backend"},
    {"work-lookups", "100", "catcache lookups per backend"},
    {"backend-profile", "", "a backend weight profile (JSON, written by calibrate) for every mock configuration"},
    {"syscalls", "off", "count syscalls per phase: on or off"},
    {"with-pg", "off", "also a real PostgreSQL server per shared_buffers (Debian's 15), measured in the same rounds: on or off"},
    {"via", "", "with --with-pg: also through a pooler, pgbouncer[:session|:transaction][,...] (see pg)"},
    {"baseline", "", "ratios against this layout/exit-check[/catcache[/syscache]] (default: array/always if run, else the first)"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
    {"svg", "", "also draw cost per connection vs shared_buffers to this SVG file"},
};

// Adds one round's records to its configuration's.
void AddRound(CompareConfig& c, const lifecycle::CycleResult& r) { lifecycle::MergeRound(r, c.merged); }

// Cost per connection against shared_buffers, one line per label, the real
// servers' too.
LineChart CostChart(const std::vector<CompareConfig>& configs, const std::vector<buffers::SharedBuffers>& sizes,
                    std::span<const pgreal::PgTargetResult> pg) {
  LineChart chart{"backendlab compare: cost per connection (us, median of rounds)", "shared_buffers", "us", {}, {}};
  for (const buffers::SharedBuffers& s : sizes) chart.x_positions.push_back(buffers::FormatSize(s.bytes));
  // The point of `label` at the size of `bytes`: 1e6 / the median rate.
  auto add = [&](const std::string& label, uint64_t bytes, const std::vector<double>& rates) {
    auto series = std::find_if(chart.series.begin(), chart.series.end(), [&](const ChartSeries& s) { return s.name == label; });
    if (series == chart.series.end()) series = chart.series.insert(series, {label, std::vector<std::optional<double>>(sizes.size())});
    const size_t x = static_cast<size_t>(
        std::find_if(sizes.begin(), sizes.end(), [&](const buffers::SharedBuffers& s) { return s.bytes == bytes; }) -
        sizes.begin());
    const double rate = Summarize(rates).median;
    if (rate > 0 && x < sizes.size()) series->values[x] = 1e6 / rate;
  };
  for (const CompareConfig& c : configs) add(c.label, c.options.backend.shared_buffers.bytes, c.rates);
  for (const pgreal::PgTargetResult& t : pg) add(PgConfigLabel(t), static_cast<uint64_t>(t.shared_buffers_bytes), t.rates);
  return chart;
}

}  // namespace

std::string CompareUsage() {
  return absl::StrCat(
      "usage: backendlab compare [flags]\n"
      "Runs connect/disconnect loops over every combination of the listed layouts,\n"
      "exit-check policies, shared_buffers sizes, catcaches and syscaches, interleaved\n"
      "in an order shuffled each round, and prints conn/s and exit-phase costs with ratios to a baseline.\n\n",
      FlagsHelp(kFlags));
}

absl::Status RunCompareCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<int64_t> rounds = flags->GetInt("rounds", 1, 100);
  if (!rounds.ok()) return rounds.status();
  absl::StatusOr<int64_t> total = flags->GetInt("connections", 1, 10'000'000);
  if (!total.ok()) return total.status();
  if (*total < *rounds) return absl::InvalidArgumentError("--connections must be at least --rounds");
  // The shared flags (mode, clients, work, warm-up) through the cycle parser;
  // the matrix's values are set per configuration.
  absl::StatusOr<lifecycle::CycleOptions> base = CycleOptionsFromFlags(*flags, /*with_configuration=*/false);
  if (!base.ok()) return base.status();
  base->connections = *total / *rounds;
  if (base->clients > base->connections) return absl::InvalidArgumentError("--clients is more than the connections of one round");
  base->baseline_forks = 30;
  absl::StatusOr<CompareMatrix> matrix = BuildCompareMatrix(*flags, *base);
  if (!matrix.ok()) return matrix.status();
  std::vector<CompareConfig>& configs = matrix->configs;
  absl::StatusOr<bool> with_pg = flags->GetBool("with-pg");
  if (!with_pg.ok()) return with_pg.status();
  pgreal::PgRunOptions pg_options;
  if (*with_pg) {
    absl::StatusOr<pgreal::Installation> installation = pgreal::DefaultInstallation();
    if (!installation.ok()) return installation.status();
    pg_options.installations.push_back(*installation);
    for (const buffers::SharedBuffers& size : matrix->sizes) pg_options.shared_buffers.push_back(static_cast<int64_t>(size.bytes));
    pg_options.server.max_connections = base->clients + 5;
    pg_options.loop.clients = base->clients;
    pg_options.loop.connections = base->connections;
    pg_options.loop.warmup = base->warmup;
    pg_options.rounds = *rounds;
    if (flags->Has("via")) {
      absl::StatusOr<std::vector<std::string>> vias = flags->GetList("via");
      if (!vias.ok()) return vias.status();
      absl::StatusOr<std::vector<pgreal::Via>> parsed = pgreal::ParseVias(*vias);
      if (!parsed.ok()) return parsed.status();
      pg_options.via = *parsed;
    }
  } else if (flags->Has("via")) {
    return absl::InvalidArgumentError("--via goes with --with-pg");
  }
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  std::unique_ptr<pgreal::PgServers> pg;
  if (*with_pg) {
    if (isatty(STDERR_FILENO)) {
      pg_options.progress = [](const std::string& line) { std::fprintf(stderr, "\r%s\033[K", line.c_str()); };
    }
    absl::StatusOr<std::unique_ptr<pgreal::PgServers>> started = pgreal::PgServers::Start(pg_options);
    if (pg_options.progress) std::fprintf(stderr, "\r\033[K");
    if (!started.ok()) return started.status();
    pg = std::move(*started);
  }

  // The mock's configurations, then the real servers, every one once per round.
  const size_t pg_count = pg != nullptr ? pg->size() : 0;
  absl::Status measured = RunInterleaved("compare", *rounds, configs.size() + pg_count, [&](size_t i, int64_t) -> absl::Status {
    if (i >= configs.size()) return pg->Measure(i - configs.size());
    CompareConfig& c = configs[i];
    absl::StatusOr<lifecycle::CycleResult> r = lifecycle::RunCycle(c.options);
    if (!r.ok()) return r.status();
    const lifecycle::CycleSummary s = lifecycle::Summarize(*r);
    if (absl::Status outcome = RunOutcome(*r, s); !outcome.ok()) {
      if (absl::IsCancelled(outcome)) return outcome;
      // Crashed backends or failed connections: finish the matrix, then fail.
      if (c.failure.empty()) c.failure = std::string(outcome.message());
    }
    c.rates.push_back(s.connections_per_second);
    AddRound(c, *r);
    return absl::OkStatus();
  });
  std::vector<pgreal::PgTargetResult> pg_targets;
  if (pg != nullptr) {
    absl::StatusOr<pgreal::PgResult> finished = pg->Finish();
    if (measured.ok() && !finished.ok()) measured = finished.status();
    if (finished.ok()) pg_targets = std::move(finished->targets);
  }
  if (!measured.ok()) return measured;

  Report report = CompareReport(*matrix);
  AddPgRows(report, *matrix, pg_targets);
  nlohmann::json header = MachineHeader();
  header["command"] = "compare";
  header["rounds"] = *rounds;
  header["baseline"] = matrix->baseline_label;
  header["shared"] = ConfigJson(*base);
  if (!pg_targets.empty()) {
    header["pg"] = {{"version", pg_targets[0].installation.version},
                    {"build", pg_targets[0].installation.build},
                    {"bindir", pg_targets[0].installation.bindir}};
    nlohmann::json settings = nlohmann::json::object();
    for (const auto& [name, value] : pg_targets[0].settings) {
      if (name != "shared_buffers") settings[name] = value;
    }
    header["pg"]["settings"] = settings;
  }
  report.SetHeader(header);
  out << absl::StrFormat("backendlab compare: %d configurations x %d interleaved rounds, %d connections each per round\n",
                         configs.size(), *rounds, base->connections);
  out << "every configuration: " << ConfigLine(*base, /*with_configuration=*/false) << "\n";
  out << MachineLine(header) << "\n\n";
  report.PrintText(out);
  out << "\nconn/s: median over rounds; us/conn = 1e6 / conn/s; x floor: conn/s over the bare\n"
         "fork+exit+wait rate measured in the same runs; exit_check, teardown, reap: median us per\n"
         "backend; ratios against " << matrix->baseline_label << " at the same shared_buffers.\n";
  if (!pg_targets.empty()) {
    out << PgConfigLabel(pg_targets[0]) << ": PostgreSQL " << pg_targets[0].installation.version << " ("
        << pg_targets[0].installation.build << "), a real server started by the tool, the same loop through libpq\n"
        << "  (backendlab pg measures it alone, with its server-side costs; pg --profile, its phases). Settings:";
    for (const auto& [name, value] : pg_targets[0].settings) {
      if (name != "shared_buffers") out << " " << name << "=" << value;
    }
    out << "\n";
  }
  if (!kAssertChecking) out << "exit-check assert: compiled out of this build (no assert checking), as in a PostgreSQL >= 9.1 release build.\n";

  if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
  if (flags->Has("svg")) {
    if (absl::Status s = WriteTextFile(flags->Get("svg"), RenderLineChart(CostChart(configs, matrix->sizes, pg_targets))); !s.ok()) return s;
    out << "chart: " << flags->Get("svg") << "\n";
  }
  for (const CompareConfig& c : configs) {
    if (!c.failure.empty()) {
      return absl::AbortedError(absl::StrCat(c.label, " at ", buffers::FormatSize(c.options.backend.shared_buffers.bytes),
                                             ": ", c.failure));
    }
  }
  return absl::OkStatus();
}

}  // namespace backendlab::tools
