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
#include "base/server_usage.h"
#include "base/summary.h"
#include "pgreal/pg_run.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/pg_flags.h"
#include "tools/pg_profile_report.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

Cell PerConnectionCell(int64_t total, int64_t connections, double scale = 1) {
  if (total < 0 || connections <= 0) return std::monostate{};
  return static_cast<double>(total) * scale / static_cast<double>(connections);
}

// A figure per connection; -1 (not counted) is a missing value.
Cell Counted(double value) { return value < 0 ? Cell{} : Cell{value}; }

// The table: a row per target, its statistics computed beforehand.
// Ratios short of `precision` (> 0) are marked.
Report PgTable(const pgreal::PgResult& result, double precision) {
  Report report({{"server", "server"},
                 {"clients", ""},
                 {"version", ""},
                 {"build", ""},
                 {"shared_buffers_bytes", ""},
                 {"connections_per_second", "conn/s", 0, ColumnKind::kMedian},
                 {"connections_per_second_vs_baseline", "conn/s vs base", 2, ColumnKind::kRatio},
                 {"us_per_connection", "us/conn"},
                 {"connect_p50_us", "connect p50"},
                 {"connect_p90_us", "p90"},
                 {"connect_p99_us", "p99"},
                 {"client_cpu_us", "client CPU us"},
                 {"server_cpu_us", "server CPU us", 0, ColumnKind::kMedian},
                 {"server_cpu_us_vs_baseline", "CPU vs base", 2, ColumnKind::kRatio},
                 {"server_task_clock_us", "task-clock us"},
                 {"server_user_us", "user"},
                 {"server_system_us", "sys"},
                 {"server_minor_faults", "minor"},
                 {"server_major_faults", "major", 2},
                 {"server_context_switches", "ctx sw"},
                 {"server_syscalls", "syscalls"},
                 {"via", ""},
                 {"server_backends", "backends"},
                 {"pooler_cpu_us", "pooler CPU us"},
                 {"connections", ""},
                 {"kept_directory", ""},
                 // Each round's figures, in round order, for a reader to pair again.
                 {"rounds_server_cpu_us", ""},
                 {"rounds_connections_per_second", ""}});
  for (size_t i = 0; i < result.targets.size(); ++i) {
    const pgreal::PgTargetResult& t = result.targets[i];
    const ServerStats& st = result.stats[i];
    const Summary connect = t.loop.connect_ns.Summarize(1e-3);
    const int64_t n = t.loop.connections;
    const ServerUsage all = Merged(t.server_rounds);
    const PerConnection per = PerConnectionOf(all);
    const bool counted = !t.server_rounds.empty();
    const double rate = st.rate.median;
    report.AddRow({t.label, int64_t{t.clients}, t.installation.version, t.installation.build,
                   t.shared_buffers_bytes > 0 ? Cell{t.shared_buffers_bytes} : Cell{}, EstimateOf(st.rate),
                   RatioCell(st.rate_vs_baseline, precision), rate > 0 ? Cell{1e6 / rate} : Cell{}, connect.median, connect.p90,
                   connect.p99, PerConnectionCell(t.loop.client.cpu_ns, n, 1e-3),
                   st.has_cpu ? Cell{EstimateOf(st.cpu_us)} : Cell{}, RatioCell(st.cpu_vs_baseline, precision),
                   counted ? Counted(per.task_clock_us) : Cell{},
                   counted ? Counted(per.user_us) : Cell{}, counted ? Counted(per.system_us) : Cell{},
                   counted ? Counted(per.minor_faults) : Cell{}, counted ? Counted(per.major_faults) : Cell{},
                   counted ? Counted(per.context_switches) : Cell{}, counted ? Counted(per.syscalls) : Cell{},
                   t.via.empty() ? Cell{} : Cell{t.via}, t.server_backends >= 0 ? Cell{t.server_backends} : Cell{},
                   t.pooler_available ? PerConnectionCell(t.pooler_cpu_ns, all.connections, 1e-3) : Cell{}, n,
                   t.kept_directory.empty() ? Cell{} : Cell{t.kept_directory}, Values(CpuUsByRound(t.server_rounds)),
                   Values(t.rates)});
  }
  return report;
}

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

absl::Status RunPgCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, PgFlags());
  if (!flags.ok()) return flags.status();
  absl::StatusOr<bool> explain = flags->GetBool("explain-phases");
  if (!explain.ok()) return explain.status();
  if (*explain) return ExplainPhasesOf(*flags, out);
  absl::StatusOr<pgreal::PgRunOptions> options = OptionsFromFlags(*flags);
  if (!options.ok()) return options.status();
  // --profile's default --out too, before the run rather than after it.
  if (absl::Status s = CheckOutputPaths(*flags, !options->profilers.empty() ? ProfileDirectory(*flags) : ""); !s.ok()) {
    return s;
  }
  const bool progress = isatty(STDERR_FILENO);
  if (progress) {
    options->progress = [](const std::string& line) { std::fprintf(stderr, "\r%s\033[K", line.c_str()); };
  }
  absl::StatusOr<pgreal::PgResult> result = pgreal::RunPg(*options);
  if (progress) std::fprintf(stderr, "\r\033[K");
  if (!result.ok()) return result.status();

  nlohmann::json header = MachineHeader();
  const size_t servers = std::count_if(result->targets.begin(), result->targets.end(), [&](const pgreal::PgTargetResult& t) {
    return t.via.empty() && t.clients == options->clients.front();
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

  Report report = PgTable(*result, options->precision.half_width);
  report.PrintText(out);
  out << "per connection; conn/s is the median of the rounds [95 % interval], connect and client CPU over the\n"
         "measured connections, the server's and the pooler's over every connection they served while counted\n"
         "(the warm-ups too); server CPU is each round's, its median [95 % interval], the other server columns\n"
         "over the whole run.\n"
         "server: the postmaster and every backend it forked in the run. server CPU, user, sys and faults: the\n"
         "kernel's accounting of the postmaster and its reaped children (CPU in clock ticks), as the mock's;\n"
         "task-clock, ctx sw and syscalls: perf, inherited.\n"
         "vs base: at the same clients, a pooled row over its server's direct row, a direct row over the first\n"
         "server listed;\n"
      << kRatioLegend << ".\n";
  if (options->precision.half_width > 0 && !result->compared) {
    out << "precision: one server, no ratio to hold to it: --rounds and --max-time decide.\n";
  } else if (options->precision.half_width > 0) {
    const bool precise = result->worst_half_width <= options->precision.half_width;
    out << absl::StrFormat("precision: every vs-base ratio within +-%.3g %% %s after %d rounds (widest +-%.1f %%)",
                           100 * options->precision.half_width, precise ? "reached" : "NOT reached", result->run.rounds,
                           100 * result->worst_half_width)
        << (precise ? "" : "; * marks each ratio short of it (raise --rounds, --max-time or --connections)")
        << (result->run.timed_out ? "; --max-time ended the rounds" : "") << "\n";
  }
  if (!options->via.empty()) {
    out << "through a pooler: server columns are per client connection, the pooled backends' whole lives included;\n"
           "backends: the server's backends forked for the pooler over the run (new children of the postmaster at\n"
           "each loop's end); the direct rows fork one per connection.\n";
    for (const pgreal::PgTargetResult& t : result->targets) {
      if (t.via.empty()) continue;
      out << absl::StrFormat("%s: %d server backends for %d client connections\n", t.label, t.server_backends,
                             t.loop.connections + options->rounds * options->loop.warmup);
    }
  }
  if (!result->server_figures_note.empty()) out << "server-side figures " << result->server_figures_note << "\n";
  for (const pgreal::PgTargetResult& t : result->targets) {
    if (!t.kept_directory.empty() && t.via.empty()) out << "kept (--keep): " << t.label << ": " << t.kept_directory << "\n";
  }
  if (!options->server_counters) out << "server counters off (--server-counters=off): their columns are empty.\n";
  if (!result->targets.empty()) {
    for (const std::string& why : result->targets[0].server_events_unavailable) out << why << "\n";
  }

  if (!options->profilers.empty()) {
    absl::StatusOr<int64_t> top_n = TopN(*flags);
    if (!top_n.ok()) return top_n.status();
    if (absl::Status s = ReportPgProfiles(*result, ProfileDirectory(*flags), *top_n, out, header); !s.ok()) return s;
  }

  header["command"] = "pg";
  header["clients"] = options->clients;
  header["rounds"] = result->run.rounds;
  header["seed"] = options->seed;
  header["precision_percent"] = 100 * options->precision.half_width;
  header["worst_half_width_percent"] = 100 * result->worst_half_width;
  header["max_time_s"] = options->precision.max_time == absl::InfiniteDuration()
                             ? nlohmann::json(nullptr)
                             : nlohmann::json(absl::ToDoubleSeconds(options->precision.max_time));
  header["elapsed_s"] = absl::ToDoubleSeconds(result->run.elapsed);
  header["statistics_s"] = absl::ToDoubleSeconds(result->run.statistics);
  header["query"] = options->loop.query;
  header["server_counters"] = options->server_counters;
  header["tcp"] = options->server.tcp;
  if (!options->via.empty()) {
    nlohmann::json via = nlohmann::json::array();
    for (const pgreal::Via& v : options->via) via.push_back(v.label());
    header["via"] = via;
  }
  if (!result->targets.empty()) header["settings"] = SettingsJson(result->targets[0].settings);
  report.SetHeader(header);
  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
