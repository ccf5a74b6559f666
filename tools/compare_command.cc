// `backendlab compare`: a matrix of configurations (layout x exit-check x
// shared_buffers x catcache x syscache), each run by lifecycle::RunCycle once
// per round, in an order shuffled each round, rounds until every ratio to the
// baseline is as precise as asked or time is up; one table of medians and
// paired ratios with their intervals and verdicts, and a chart.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
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
    {"clients", "1", "connections in flight at once; a list (1,4) measures every configuration at each, conn/s at one client and at saturation (>= 2 x cores)"},
    {"connections", "10", "measured connections per configuration and round"},
    {"rounds", "1000", "at most this many interleaved rounds"},
    {"precision", "2", "percent: rounds go on until every cost and rate ratio's 95 % interval is within +-this of it (0: every round runs)"},
    {"max-time", "100s", "no round is begun that would end past this, precise or not"},
    {"seed", "1", "seed of the rounds' shuffled orders"},
    {"aa", "off", "also a second copy of the baseline, <baseline>#2, whose ratio to it must come out ~: on or off"},
    {"warmup", "3", "warm-up connections per configuration and round"},
    {"work-pins", "20", "pin+unpin pairs per backend"},
    {"work-lookups", "100", "catcache lookups per backend"},
    {"backend-profile", "", "a backend weight profile (JSON, written by calibrate) for every mock configuration"},
    {"syscalls", "off", "count syscalls per phase: on or off"},
    {"with-pg", "off", "also a real PostgreSQL server per shared_buffers (Debian's 15), measured in the same rounds: on or off"},
    {"via", "", "with --with-pg: also through a pooler, pgbouncer[:session|:transaction][,...] (see pg)"},
    {"baseline", "", "ratios against this layout/exit-check[/catcache[/syscache]] (default: array/always if run, else the first)"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
    {"svg", "", "also draw CPU per connection vs shared_buffers to this SVG file"},
};

// CPU per connection of the whole server against shared_buffers, one line
// per label, the real servers' too: the medians of the table.
LineChart CostChart(const CompareMatrix& matrix, const CompareStats& stats, std::span<const pgreal::PgTargetResult> pg) {
  LineChart chart{"backendlab compare: CPU per connection of the whole server (us, median of rounds)", "shared_buffers",
                  "us",
                  {},
                  {}};
  const std::vector<buffers::SharedBuffers>& sizes = matrix.sizes;
  for (const buffers::SharedBuffers& s : sizes) chart.x_positions.push_back(buffers::FormatSize(s.bytes));
  auto add = [&](std::string label, uint64_t bytes, int clients, const RowStats& r) {
    if (matrix.clients.size() > 1) absl::StrAppend(&label, ", ", ClientsText(clients));
    auto series = std::find_if(chart.series.begin(), chart.series.end(), [&](const ChartSeries& s) { return s.name == label; });
    if (series == chart.series.end()) series = chart.series.insert(series, {label, std::vector<std::optional<double>>(sizes.size())});
    const size_t x = static_cast<size_t>(
        std::find_if(sizes.begin(), sizes.end(), [&](const buffers::SharedBuffers& s) { return s.bytes == bytes; }) -
        sizes.begin());
    if (r.has_cpu && x < sizes.size()) series->values[x] = r.cpu_us.value;
  };
  for (size_t i = 0; i < matrix.configs.size(); ++i) {
    add(matrix.configs[i].label, matrix.configs[i].options.backend.shared_buffers.bytes, matrix.configs[i].options.clients,
        stats.mock[i]);
  }
  for (size_t i = 0; i < pg.size(); ++i) {
    add(PgConfigLabel(pg[i]), static_cast<uint64_t>(pg[i].shared_buffers_bytes), pg[i].clients, stats.pg[i]);
  }
  return chart;
}

}  // namespace

std::string CompareUsage() {
  return absl::StrCat(
      "usage: backendlab compare [flags]\n"
      "Runs connect/disconnect loops over every combination of the listed layouts,\n"
      "exit-check policies, shared_buffers sizes, catcaches and syscaches, interleaved\n"
      "in rounds of shuffled order until every ratio is precise enough, and prints the\n"
      "server's CPU per connection and conn/s, with ratios to a baseline, their 95 %\n"
      "intervals and verdicts (faster, slower, ~).\n\n",
      FlagsHelp(kFlags));
}

absl::Status RunCompareCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<int64_t> rounds = flags->GetInt("rounds", 1, 10'000);
  if (!rounds.ok()) return rounds.status();
  absl::StatusOr<int64_t> per_round = flags->GetInt("connections", 1, 10'000'000);
  if (!per_round.ok()) return per_round.status();
  absl::StatusOr<double> precision_pct = flags->GetNumber("precision", 0, 100);
  if (!precision_pct.ok()) return precision_pct.status();
  absl::StatusOr<int64_t> max_time_ms = ParseDurationMs(flags->Get("max-time"));
  if (!max_time_ms.ok()) return absl::InvalidArgumentError(absl::StrCat("--max-time: ", max_time_ms.status().message()));
  const absl::Duration max_time = absl::Milliseconds(*max_time_ms);
  absl::StatusOr<int64_t> seed = flags->GetInt("seed", 0, INT64_MAX);
  if (!seed.ok()) return seed.status();
  absl::StatusOr<bool> aa = flags->GetBool("aa");
  if (!aa.ok()) return aa.status();
  // The shared flags (mode, work, warm-up) through the cycle parser; the
  // matrix's values are set per configuration.
  absl::StatusOr<lifecycle::CycleOptions> base = CycleOptionsFromFlags(*flags, /*with_configuration=*/false);
  if (!base.ok()) return base.status();
  base->connections = *per_round;
  base->baseline_forks = 3;  // before and after each round: the fork floor, over every round (each takes ~1 ms)
  absl::StatusOr<CompareMatrix> matrix = BuildCompareMatrix(*flags, *base, *aa);
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
    pg_options.clients = matrix->clients;
    pg_options.server.max_connections = *std::max_element(matrix->clients.begin(), matrix->clients.end()) + 5;
    pg_options.loop.clients = matrix->clients.front();
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

  // The mock's configurations, then the real servers, every one once per
  // round, until every ratio is precise enough or the next round would end
  // past --max-time.
  const double precision = *precision_pct / 100;
  const size_t pg_count = pg != nullptr ? pg->size() : 0;
  auto targets = [&] {
    std::vector<pgreal::PgTargetResult> t;
    for (size_t i = 0; i < pg_count; ++i) t.push_back(pg->target(i));
    return t;
  };
  // Rows are only ever divided by rows at the same shared_buffers and
  // clients: one block per pair in each round, the real server at them in it
  // too.
  std::vector<size_t> groups;
  auto block_of = [&](uint64_t bytes, int clients) {
    const size_t size = static_cast<size_t>(std::find_if(matrix->sizes.begin(), matrix->sizes.end(),
                                                         [&](const buffers::SharedBuffers& s) { return s.bytes == bytes; }) -
                                            matrix->sizes.begin());
    const size_t n = static_cast<size_t>(std::find(matrix->clients.begin(), matrix->clients.end(), clients) -
                                         matrix->clients.begin());
    return size * matrix->clients.size() + n;
  };
  for (const CompareConfig& c : configs) groups.push_back(block_of(c.options.backend.shared_buffers.bytes, c.options.clients));
  for (size_t i = 0; i < pg_count; ++i) {
    groups.push_back(block_of(static_cast<uint64_t>(pg->target(i).shared_buffers_bytes), pg->target(i).clients));
  }
  PreciseRun run;
  absl::Status measured = RunUntilPrecise(
      "compare", RoundPlan(*rounds, static_cast<uint64_t>(*seed), groups), Precision{precision, max_time},
      configs.size() + pg_count,
      [&](size_t i, int64_t) -> absl::Status {
        if (i >= configs.size()) return pg->Measure(i - configs.size());
        CompareConfig& c = configs[i];
        absl::StatusOr<lifecycle::CycleResult> r = lifecycle::RunCycle(c.options);
        if (!r.ok()) return r.status();
        const lifecycle::CycleSummary s = lifecycle::Summarize(*r);
        if (absl::Status outcome = lifecycle::RunOutcome(*r, s); !outcome.ok()) {
          if (absl::IsCancelled(outcome)) return outcome;
          // Crashed backends or failed connections: finish the matrix, then fail.
          if (c.failure.empty()) c.failure = std::string(outcome.message());
        }
        AddRound(c, *r);
        return absl::OkStatus();
      },
      [&] { return ComputeCompareStats(*matrix, targets(), precision).worst_half_width; }, run);
  const absl::Duration elapsed = run.elapsed;
  absl::Duration statistics_time = run.statistics;
  std::vector<pgreal::PgTargetResult> pg_targets;
  if (pg != nullptr) {
    absl::StatusOr<pgreal::PgResult> finished = pg->Finish();
    if (measured.ok() && !finished.ok()) measured = finished.status();
    if (finished.ok()) pg_targets = std::move(finished->targets);
  }
  if (!measured.ok()) return measured;

  const absl::Time t0 = absl::Now();
  const CompareStats stats = ComputeCompareStats(*matrix, pg_targets, precision);
  statistics_time += absl::Now() - t0;
  Report report = CompareReport(*matrix, stats, pg_targets);
  nlohmann::json header = MachineHeader();
  header["command"] = "compare";
  header["rounds"] = stats.rounds;
  header["seed"] = *seed;
  header["precision_percent"] = *precision_pct;
  header["precise"] = stats.precise;
  header["worst_half_width_percent"] = 100 * stats.worst_half_width;
  header["max_time_s"] = absl::ToDoubleSeconds(max_time);
  header["elapsed_s"] = absl::ToDoubleSeconds(elapsed);
  header["statistics_s"] = absl::ToDoubleSeconds(statistics_time);
  header["baseline"] = matrix->baseline_label;
  header["aa"] = *aa;
  if (*aa) header["aa_failures"] = stats.aa_failures;
  header["shared"] = ConfigJson(*base);
  header["shared"]["clients"] = matrix->clients;
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
  const bool one_clients = matrix->clients.size() == 1;
  out << absl::StrFormat("backendlab compare: %d configurations x %d interleaved rounds (a block per shared_buffers%s, orders shuffled, seed %d), "
                         "%d connections each per round, %.0f s\n",
                         configs.size() + pg_targets.size(), stats.rounds, one_clients ? "" : " and clients", *seed,
                         base->connections, absl::ToDoubleSeconds(elapsed));
  out << "every configuration: " << ConfigLine(*base, /*with_configuration=*/false) << "\n";
  out << MachineLine(header) << "\n\n";
  report.PrintText(out);
  out << "\nCPU us/conn: the whole server's CPU (postmaster and backends, user and kernel) per connection;\n"
      << (one_clients ? absl::StrCat("conn/s with ", ClientsText(matrix->clients[0]), " in flight")
                      : std::string("conn/s with the row's clients in flight (1: one at a time; >= 2 x cores: saturation)"))
      << ". Both: median over rounds, +-half its 95 % interval.\n"
         "vs base: the ratio to the baseline, "
      << matrix->baseline_label << (one_clients ? ", at the same shared_buffers" : ", at the same shared_buffers and clients")
      << ", paired within each round and\n"
         "summarised over rounds (geometric mean, 95 % t interval on the log ratios), then a verdict:\n"
         "faster or slower where the interval excludes 1, ~ where it covers 1 (no difference this run\n"
         "can resolve). x floor: conn/s over the bare fork+exit+wait rate measured in the same runs;\n"
         "exit: the exit check's median us, faults and share of a backend's CPU.\n";
  if (precision > 0) {
    out << absl::StrFormat("precision: every cost and rate ratio within +-%.3g %% ", *precision_pct)
        << (stats.precise ? "reached" : "NOT reached")
        << absl::StrFormat(" after %d rounds (widest +-%.1f %%)", stats.rounds, 100 * stats.worst_half_width);
    if (!stats.precise) out << "; * marks each ratio short of it (raise --max-time or --connections)";
    out << "\n";
  }
  if (*aa) {
    if (stats.aa_failures.empty()) {
      out << "A/A: every " << matrix->baseline_label << "#2 came out ~ against " << matrix->baseline_label << ", as it must.\n";
    } else {
      out << "A/A: " << absl::StrJoin(stats.aa_failures, ", ") << " differ from the same configuration: this machine was too\n"
          << "noisy for the precision asked; a difference of that size elsewhere in this table is not resolved.\n";
    }
  }
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
    if (absl::Status s = WriteTextFile(flags->Get("svg"), RenderLineChart(CostChart(*matrix, stats, pg_targets))); !s.ok()) return s;
    out << "chart: " << flags->Get("svg") << "\n";
  }
  for (const CompareConfig& c : configs) {
    if (!c.failure.empty()) {
      return absl::AbortedError(absl::StrCat(RowName(*matrix, c), ": ", c.failure));
    }
  }
  return absl::OkStatus();
}

}  // namespace backendlab::tools
