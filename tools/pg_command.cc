// `backendlab pg`: the connect/disconnect loop of `cycle`, through libpq,
// against real PostgreSQL servers the tool starts (or one it is given), with
// the server's costs per connection: flags (tools/pg_flags.h) -> pgreal::RunPg
// -> pgreal::ComputePgStats -> the table.
#include "tools/pg_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/cpus.h"
#include "base/start_layout.h"
#include "pgreal/pg_run.h"
#include "tools/exports_report.h"
#include "tools/flags.h"
#include "tools/host_changes.h"
#include "tools/html_report.h"
#include "tools/machine_header.h"
#include "tools/server_columns.h"
#include "tools/pg_flags.h"
#include "tools/pg_profile_report.h"
#include "tools/pg_report.h"
#include "tools/report.h"
#include "tools/progress.h"

namespace backendlab::tools {
namespace {

nlohmann::json SettingsJson(const pgreal::Settings& settings) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : settings) j[name] = value;
  return j;
}

}  // namespace

std::string PgUsage() {
  return absl::StrCat(
      "usage: backendlab pg [flags]\n"
      "Connect/disconnect loops (like pgbench -C) through libpq against real PostgreSQL servers started\n"
      "by the tool (one per version x shared_buffers, interleaved over rounds), or an existing one:\n"
      "conn/s, connect latency, and the server's CPU, faults, context switches and syscalls per connection.\n\n",
      FlagsHelp(PgFlags()));
}

absl::Status RunPgCommand(std::span<const std::string> args, std::ostream& terminal) {
  Transcript out(terminal);  // what is printed, kept for --html
  absl::StatusOr<Flags> flags = Flags::Parse(args, PgFlags());
  if (!flags.ok()) return flags.status();
  absl::StatusOr<bool> explain = flags->GetBool("explain-phases");
  if (!explain.ok()) return explain.status();
  if (*explain) return ExplainPhasesOf(*flags, out);
  absl::StatusOr<pgreal::PgRunOptions> options = OptionsFromFlags(*flags);
  if (!options.ok()) return options.status();
  // The exports' files, checked before the run as --json's are.
  absl::StatusOr<ExportRequest> exports = ExportRequestFromFlags(*flags);
  if (!exports.ok()) return exports.status();
  // --profile's default --out too, before the run rather than after it.
  if (absl::Status s = CheckOutputPaths(*flags, !options->profilers.empty() ? ProfileDirectory(*flags) : ""); !s.ok()) {
    return s;
  }
  ProgressLine progress;
  options->progress = progress.Callback();
  RestoreHostChanges(out);
  absl::StatusOr<pgreal::PgResult> result = pgreal::RunPg(*options);
  progress.Clear();
  if (!result.ok()) return result.status();

  nlohmann::json header = MachineHeader();
  // A server's first row: direct, at the first of every list.
  const size_t servers = std::count_if(result->targets.begin(), result->targets.end(), [&](const pgreal::PgTargetResult& t) {
    return !t.key.via && t.key.clients == options->clients.front() && t.key.transport == options->transports.front() &&
           t.key.hold == (options->hold.empty() ? 0 : options->hold.front());
  });
  out << "backendlab pg: "
      << (options->conninfo.empty() ? absl::StrCat(servers, " server(s) started by the tool")
                                    : std::string("an existing server (--conninfo)"))
      << absl::StrFormat(", %s client(s), %s per run, %d round(s) interleaved (orders shuffled, seed %d)%s, %.0f s\n",
                         absl::StrJoin(options->clients, ","),
                         options->loop.connections > 0 ? absl::StrCat(options->loop.connections, " connections")
                                                       : absl::StrCat(absl::ToInt64Milliseconds(options->loop.duration), " ms"),
                         result->run.rounds, options->seed, options->loop.query.empty() ? ", no query" : ", a query per connection",
                         absl::ToDoubleSeconds(result->run.elapsed));
  out << RoundsEndedLine(result->run, options->rounds) << "\n";
  if (const std::string starts =
          StartsLine(options->randomise && options->conninfo.empty(), "each server's one start of the run", kRandomisedAtExec);
      !starts.empty()) {
    out << starts << "\n";
  }
  if (const std::string line = SchedulingLine(result->scheduling, options->conninfo.empty()
                                                                      ? "the client, every server and its backends"
                                                                      : "the client (the server is not the tool's)");
      !line.empty()) {
    out << line << "\n";
  }
  out << MachineLine(header) << "\n";
  for (const pgreal::Installation& i : options->installations) {
    out << "PostgreSQL " << i.version << ": " << i.build << ", " << i.bindir << "\n";
  }
  if (!result->targets.empty() && !result->targets[0].settings.empty()) {
    out << "settings:";
    for (const auto& [name, value] : result->targets[0].settings) {
      if (name != "shared_buffers") out << " " << name << "=" << value;
    }
    out << "\n";
  }
  out << "\n";

  std::vector<HtmlPage::Figure> figures;
  std::vector<profiling::TraceSpan> timeline;
  Report report = PgTable(*result, options->precision.half_width);
  report.PrintText(out);
  PrintPgNotes(*result, *options, out);
  PrintServerClock(*result, out);
  PrintManyConnections(*result, static_cast<int>(AllowedCpus().size()), out);

  if (!options->profilers.empty()) {
    absl::StatusOr<int64_t> top_n = TopN(*flags);
    if (!top_n.ok()) return top_n.status();
    if (absl::Status s = ReportPgProfiles(*result, ProfileDirectory(*flags), *top_n, *exports, out, header,
                                          flags->Has("html") ? &figures : nullptr,
                                          flags->Has("html") ? &timeline : nullptr);
        !s.ok()) {
      return s;
    }
  }

  header["command"] = "pg";
  header["clients"] = options->clients;
  header["rounds"] = result->run.rounds;
  header["seed"] = options->seed;
  header["randomised"] = RandomisedJson(options->randomise && options->conninfo.empty(), kRandomisedAtExec);
  AddSchedulingJson(result->scheduling, header);
  header["precision_percent"] = 100 * options->precision.half_width;
  header["same_within_percent"] = 100 * options->same_within;
  header["confidence_per_look"] = result->rule.confidence;
  header["looks"] = result->run.looks;
  header["looks_taken"] = result->run.looks_taken;
  header["decided"] = result->undecided.empty();
  header["undecided"] = UndecidedJson(result->undecided);
  header["worst_half_width_percent"] = 100 * result->worst_half_width;
  header["max_time_s"] = options->precision.max_time == absl::InfiniteDuration()
                             ? nlohmann::json(nullptr)
                             : nlohmann::json(absl::ToDoubleSeconds(options->precision.max_time));
  header["rounds_ended_by"] = RoundsEndedName(result->run.ended_by);
  header["elapsed_s"] = absl::ToDoubleSeconds(result->run.elapsed);
  header["statistics_s"] = absl::ToDoubleSeconds(result->run.statistics);
  header["query"] = options->loop.query;
  header["server_counters"] = options->server_counters;
  header["tcp"] = options->server.tcp;
  header["ssl"] = options->server.ssl;
  header["hold"] = options->hold;
  header["cpus"] = AllowedCpus().size();
  if (!options->via.empty()) {
    nlohmann::json via = nlohmann::json::array();
    for (const pgreal::Via& v : options->via) via.push_back(v.label());
    header["via"] = via;
  }
  if (!result->targets.empty()) header["settings"] = SettingsJson(result->targets[0].settings);
  report.SetHeader(header);
  if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
  if (flags->Has("html")) {
    out << "page: " << flags->Get("html") << "\n";
    HtmlPage page = PageOf("backendlab pg", header, report, out.text());
    page.chart_key = kServerCpuKey;
    page.chart_title = "server CPU us per connection, median of the rounds, 95 % interval";
    page.figures = std::move(figures);
    page.timeline = std::move(timeline);
    if (absl::Status s = WriteHtml(flags->Get("html"), page); !s.ok()) return s;
  }
  if (*flags->GetBool("require-decisive") && !result->undecided.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--require-decisive: ", result->undecided.size(), " vs-base cost or rate ratios left ~ (listed above)"));
  }
  return absl::OkStatus();
}

}  // namespace backendlab::tools
