// `backendlab compare`: flags (tools/compare_flags.h) -> the matrix's rounds,
// with --with-pg's real servers in them (lifecycle/compare.h) -> statistics
// -> one table of medians and paired ratios with their intervals and
// verdicts, and a chart (tools/compare_report.h).
#include <algorithm>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/interleaved.h"
#include "base/start_layout.h"
#include "lifecycle/compare.h"
#include "pgreal/pg_run.h"
#include "pgreal/pg_servers.h"
#include "tools/compare_command.h"
#include "tools/compare_flags.h"
#include "tools/compare_page.h"
#include "tools/compare_report.h"
#include "tools/host_changes.h"
#include "tools/html_report.h"
#include "tools/cycle_report.h"
#include "tools/machine_header.h"
#include "tools/progress.h"

namespace backendlab::tools {
namespace {

// The real servers' settings but shared_buffers (which each row gives).
nlohmann::json PgHeader(const pgreal::PgTargetResult& t) {
  nlohmann::json pg = {{"version", t.installation.version}, {"build", t.installation.build}, {"bindir", t.installation.bindir}};
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& [name, value] : t.settings) {
    if (name != "shared_buffers") settings[name] = value;
  }
  pg["settings"] = settings;
  return pg;
}

// The JSON header: the machine, the run, its baseline and A/A check, what
// every configuration shares, the real servers' settings.
nlohmann::json CompareHeader(const CompareRequest& request, const lifecycle::CompareStats& stats, const PreciseRun& run,
                             const SchedulingOutcome& scheduling, absl::Duration statistics_time,
                             std::span<const pgreal::PgTargetResult> targets) {
  const lifecycle::CompareMatrix& matrix = request.matrix;
  nlohmann::json header = MachineHeader();
  header["command"] = "compare";
  header["rounds"] = stats.rounds;
  header["seed"] = request.run.seed;
  header["randomised"] = RandomisedJson(request.run.randomise, kRandomisedAtStart);
  AddSchedulingJson(scheduling, header);
  header["precision_percent"] = request.precision_percent;
  header["precise"] = stats.precise;
  header["same_within_percent"] = 100 * request.run.same_within;
  header["confidence_per_look"] = stats.rule.confidence;
  header["looks"] = run.looks;
  header["looks_taken"] = run.looks_taken;
  header["decided"] = stats.undecided.empty();
  header["undecided"] = UndecidedJson(stats.undecided);
  header["worst_half_width_percent"] = 100 * stats.worst_half_width;
  header["max_time_s"] = absl::ToDoubleSeconds(request.run.precision.max_time);
  header["rounds_ended_by"] = RoundsEndedName(run.ended_by);
  header["elapsed_s"] = absl::ToDoubleSeconds(run.elapsed);
  header["statistics_s"] = absl::ToDoubleSeconds(statistics_time);
  header["baseline"] = matrix.baseline_label;
  {
    nlohmann::json modes = nlohmann::json::array();
    for (lifecycle::Mode m : matrix.modes) modes.push_back(lifecycle::ModeName(m));
    header["modes"] = modes;
  }
  header["aa"] = request.aa;
  if (request.aa) {
    header["aa_failures"] = stats.aa_failures;
    header["aa_ratios"] = stats.aa_ratios;
    header["aa_confidence"] = stats.aa_confidence;
    header["aa_confidence_per_look"] = stats.aa_confidence_per_look;
  }
  header["shared"] = ConfigJson(request.base);
  header["shared"]["clients"] = matrix.clients;
  header["shared"]["holds"] = matrix.holds;
  if (!targets.empty()) header["pg"] = PgHeader(targets[0]);
  return header;
}

// What every configuration shares, its mode or the matrix's modes first.
std::string EveryConfigurationLine(const CompareRequest& request) {
  const lifecycle::CompareMatrix& matrix = request.matrix;
  std::string every = ConfigLine(request.base, /*with_configuration=*/false);
  if (matrix.modes.size() > 1 || matrix.modes.front() != request.base.mode) {
    // The line's first words are the mode: the matrix's modes instead.
    std::vector<std::string> modes;
    for (lifecycle::Mode m : matrix.modes) modes.emplace_back(lifecycle::ModeName(m));
    std::vector<std::string> notes;
    if (std::find(matrix.modes.begin(), matrix.modes.end(), lifecycle::Mode::kThread) != matrix.modes.end()) {
      notes.push_back(absl::StrCat("thread: ", std::string(lifecycle::ThreadMemoryName(request.base.thread_memory)), " memory"));
    }
    if (std::find(matrix.modes.begin(), matrix.modes.end(), lifecycle::Mode::kPrefork) != matrix.modes.end()) {
      // A pool's figures are its steady state (CycleResult::pool_outside_cpu_ns).
      notes.push_back(absl::StrCat(request.base.pool > 0 ? absl::StrCat("prefork: pool ", request.base.pool)
                                                         : std::string("prefork: pool of clients + held + 1"),
                                   ", steady state: its build and end left out"));
    }
    const std::string thread_memory = notes.empty() ? std::string() : absl::StrCat(" (", absl::StrJoin(notes, "; "), ")");
    every = absl::StrCat(absl::StrJoin(modes, ", "), matrix.modes.size() > 1 ? " modes" : " mode", thread_memory,
                         every.substr(every.find(','), std::string::npos));
  }
  return every;
}

}  // namespace

std::string CompareUsage() {
  return absl::StrCat(
      "usage: backendlab compare [flags]\n"
      "Runs connect/disconnect loops over every combination of the listed layouts,\n"
      "exit-check policies, shared_buffers sizes, catcaches and syscaches, interleaved\n"
      "in rounds of shuffled order until every ratio is decided, and prints the\n"
      "server's CPU per connection and conn/s, with ratios to a baseline, their 95 %\n"
      "intervals and verdicts (faster, slower, same, ~).\n\n",
      FlagsHelp(CompareFlags()));
}

absl::Status RunCompareCommand(std::span<const std::string> args, std::ostream& terminal) {
  Transcript out(terminal);  // what is printed, kept for --html
  absl::StatusOr<Flags> flags = Flags::Parse(args, CompareFlags());
  if (!flags.ok()) return flags.status();
  absl::StatusOr<CompareRequest> request = CompareFromFlags(*flags);
  if (!request.ok()) return request.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  lifecycle::CompareMatrix& matrix = request->matrix;

  // Before the real servers start and the rounds fork their postmasters:
  // what they start inherits it.
  const SchedulingHold scheduling(request->run.scheduling);
  ProgressLine progress;  // the real servers' start, and their held connections in the rounds
  std::unique_ptr<pgreal::PgServers> pg;
  if (request->pg) {
    RestoreHostChanges(out);
    request->pg->progress = progress.Callback();
    absl::StatusOr<std::unique_ptr<pgreal::PgServers>> started = pgreal::PgServers::Start(*request->pg);
    progress.Clear();
    if (!started.ok()) return started.status();
    pg = std::move(*started);
  }
  auto companion_of = [](const pgreal::PgTargetResult& t) {
    const auto bytes = static_cast<uint64_t>(t.key.shared_buffers_bytes);
    return lifecycle::Companion{absl::StrCat(t.key.ServerName(), " at ", buffers::FormatSize(bytes)), bytes, t.key.clients,
                                {t.rates, t.server_rounds}};
  };
  lifecycle::Companions companions;
  if (pg != nullptr) {
    companions = {pg->size(), [&](size_t i) { return pg->Measure(i); },
                  [&](size_t i) { return companion_of(pg->target(i)); }};
  }
  absl::StatusOr<PreciseRun> run = lifecycle::RunCompare(matrix, companions, request->run);
  progress.Clear();
  std::vector<pgreal::PgTargetResult> targets;
  if (pg != nullptr) {
    absl::StatusOr<pgreal::PgResult> finished = pg->Finish();
    if (run.ok() && !finished.ok()) run = finished.status();
    if (finished.ok()) targets = std::move(finished->targets);
  }
  if (!run.ok()) return run.status();

  const absl::Time t0 = absl::Now();
  std::vector<lifecycle::Companion> measured;
  for (const pgreal::PgTargetResult& t : targets) measured.push_back(companion_of(t));
  const lifecycle::CompareReading reading{run->looks, request->run.same_within, request->run.precision.half_width};
  const lifecycle::CompareStats stats = lifecycle::ComputeCompareStats(matrix, measured, reading);
  const absl::Duration statistics_time = run->statistics + (absl::Now() - t0);

  Report report = CompareReport(matrix, stats, targets);
  nlohmann::json header = CompareHeader(*request, stats, *run, scheduling.outcome(), statistics_time, targets);
  report.SetHeader(header);

  out << absl::StrFormat("backendlab compare: %d configurations x %d interleaved rounds (a block per shared_buffers%s, orders shuffled, seed %d), "
                         "%d connections each per round, %.0f s\n",
                         matrix.configs.size() + targets.size(), stats.rounds, matrix.clients.size() == 1 ? "" : " and clients",
                         request->run.seed, request->base.connections, absl::ToDoubleSeconds(run->elapsed));
  out << RoundsEndedLine(*run, request->run.rounds) << "\n";
  const std::string every = EveryConfigurationLine(*request);
  out << "every configuration: " << every << "\n";
  if (const std::string starts = StartsLine(request->run.randomise, "every round's postmaster a start of its own", kRandomisedAtStart);
      !starts.empty()) {
    out << starts << "\n";
  }
  if (const std::string line = SchedulingLine(scheduling.outcome(), "the client, every postmaster and its backends");
      !line.empty()) {
    out << line << "\n";
  }
  out << MachineLine(header) << "\n\n";
  report.PrintText(out);
  PrintCompareNotes(matrix, stats, request->aa, targets, out);

  if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
  const std::string chart = RenderLineChart(CostChart(matrix, stats, targets));
  if (flags->Has("svg")) {
    if (absl::Status s = WriteTextFile(flags->Get("svg"), chart); !s.ok()) return s;
    out << "chart: " << flags->Get("svg") << "\n";
  }
  if (flags->Has("html")) {
    if (absl::Status s = WriteComparePage(*request, header, report, chart, flags->Get("html"), out); !s.ok()) return s;
  }
  for (const lifecycle::CompareConfig& c : matrix.configs) {
    if (!c.failure.empty()) return absl::AbortedError(absl::StrCat(lifecycle::RowName(matrix, c), ": ", c.failure));
  }
  if (request->require_decisive && !stats.undecided.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--require-decisive: ", stats.undecided.size(), " cost or rate ratios left ~ (listed above)"));
  }
  return absl::OkStatus();
}

}  // namespace backendlab::tools
