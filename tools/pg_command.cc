// `backendlab pg`: the connect/disconnect loop of `cycle`, through libpq,
// against real PostgreSQL servers the tool starts (or one it is given), with
// the server's costs per connection.
#include "tools/pg_command.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/server_usage.h"
#include "base/summary.h"
#include "buffers/shared_buffers.h"
#include "pgreal/pg_run.h"
#include "pgreal/phase_rules.h"
#include "tools/cycle_flags.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/pg_profile_report.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kFlags[] = {
    {"bindir", "", "a PostgreSQL build's bin directory (default: Debian's PostgreSQL 15)"},
    {"pg-versions", "", "major versions, e.g. 15,17,18: Debian's where installed, else tools/fetch-postgres's"},
    {"shared-buffers", "", "shared_buffers of the servers, one server per size (default 128MB,8GB)"},
    {"rounds", "3", "interleaved rounds: every server once per round, in a shuffled order; with --precision, at most this many"},
    {"precision", "0", "percent: rounds go on until every vs-base ratio's 95 % interval is within +-this of it, from 6 rounds on (0: every round runs)"},
    {"max-time", "", "no round is begun that would end past this, e.g. 2m (default: no limit)"},
    {"seed", "1", "seed of the rounds' shuffled orders"},
    {"clients", "1", "connections in flight at once; a list (1,4) measures every server at each, conn/s at one client and at saturation (>= 2 x cores)"},
    {"connections", "", "measured connections per run (default 300 unless --duration)"},
    {"duration", "", "run for this long instead, e.g. 5s"},
    {"warmup", "20", "connections made first and left out"},
    {"query", "", "SQL sent once per connection, e.g. 'SELECT 1' (default: none)"},
    {"run-as", "", "as root: the unprivileged user the server runs as (default postgres)"},
    {"tcp", "off", "also listen on 127.0.0.1 (password authentication) and connect through it: on or off"},
    {"set", "", "server settings over the defaults, NAME=VALUE[,NAME=VALUE...]"},
    {"keep", "off", "leave each server's directory (data, log) after the run: on or off"},
    {"conninfo", "", "measure this existing server instead (libpq connection string); no start, no stop"},
    {"postmaster-pid", "", "with --conninfo: the server's postmaster, for server-side figures"},
    {"server-counters", "on", "perf counters on the postmaster, inherited by its backends: on or off"},
    {"via", "", "also through a pooler, a row per entry beside the direct one: pgbouncer[:session|:transaction][,...]"},
    {"pgbouncer", "", "with --via: the pgbouncer binary (default: on PATH, else /usr/sbin/pgbouncer)"},
    {"profile", "off", "after the rounds, two more loops per server, the second recorded: phases, top functions, flame graphs. on or perf: by perf record -a (DWARF call graphs); builtin: by the built-in sampler inside the server (LD_PRELOAD; no perf needed); builtin,perf: the same pass by both, their rankings compared"},
    {"explain-phases", "off", "print the phase rules --profile uses, for the chosen versions, and exit"},
    {"out", "", "with --profile: directory for the folded stacks and flame graphs, a subdirectory per server and profiler (default backendlab-pg-profile)"},
    {"top", "", "with --profile: functions in the top-N tables (default 15)"},
    {"frequency", "", "with --profile: samples per second, 1..10000 (default 999): perf's per CPU, the built-in sampler's per second of each process's CPU time"},
    {"json", "", "also write the results as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};


// A --pg-versions entry: a major version tools/fetch-postgres knows.
absl::StatusOr<int> ParseMajor(const std::string& text) {
  int major;
  if (!absl::SimpleAtoi(text, &major) || major < 10 || major > 18) {
    return absl::InvalidArgumentError(absl::StrCat("--pg-versions: ", Quoted(text), " is not a major version from 10 to 18"));
  }
  return major;
}

// --profile: off; on, the flag alone, meaning perf (as before there was a
// choice); or a list of profilers, each once.
absl::StatusOr<std::vector<pgreal::Profiler>> ProfilersOf(const Flags& flags) {
  const std::string value = flags.Get("profile");
  if (value == "off") return std::vector<pgreal::Profiler>();
  if (value == "on") return std::vector<pgreal::Profiler>{pgreal::Profiler::kPerf};
  absl::StatusOr<std::vector<std::string>> names = flags.GetList("profile");
  if (!names.ok()) return names.status();
  std::vector<pgreal::Profiler> profilers;
  for (const std::string& name : *names) {
    absl::StatusOr<pgreal::Profiler> p = pgreal::ParseProfiler(name);
    if (!p.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--profile: ", Quoted(name), " is not on, off, or a list of perf and builtin"));
    }
    profilers.push_back(*p);
  }
  return profilers;
}

// --top and --out of --profile, with their defaults.
absl::StatusOr<int64_t> TopN(const Flags& flags) { return flags.Has("top") ? flags.GetInt("top", 1, 1000) : 15; }
std::string ProfileDirectory(const Flags& flags) { return flags.Has("out") ? flags.Get("out") : "backendlab-pg-profile"; }

Cell PerConnectionCell(int64_t total, int64_t connections, double scale = 1) {
  if (total < 0 || connections <= 0) return std::monostate{};
  return static_cast<double>(total) * scale / static_cast<double>(connections);
}

// A figure per connection; -1 (not counted) is a missing value.
Cell Counted(double value) { return value < 0 ? Cell{} : Cell{value}; }

// The table: a row per target, its statistics computed beforehand.
// Ratios short of `precision` (> 0) are marked.
Report PgTable(const pgreal::PgResult& result, const std::vector<ServerStats>& stats, double precision) {
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
    const ServerStats& st = stats[i];
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

absl::StatusOr<pgreal::PgRunOptions> OptionsFromFlags(const Flags& flags) {
  pgreal::PgRunOptions options;
  const bool existing = flags.Has("conninfo");
  if (existing) {
    for (const char* owned : {"bindir", "pg-versions", "shared-buffers", "tcp", "set", "keep", "run-as", "via", "pgbouncer"}) {
      if (flags.Has(owned) && flags.Get(owned) != "off") {
        return absl::InvalidArgumentError(
            absl::StrCat("--", owned, " is for a server the tool starts; --conninfo names an existing one"));
      }
    }
    options.conninfo = flags.Get("conninfo");
    // A connection string libpq cannot parse is bad input, said before any
    // connection is tried.
    char* error = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(options.conninfo.c_str(), &error);
    if (parsed == nullptr) {
      const std::string why = error != nullptr ? std::string(error) : std::string("out of memory");
      PQfreemem(error);
      return absl::InvalidArgumentError(absl::StrCat("--conninfo: ", why));
    }
    PQconninfoFree(parsed);
    if (flags.Has("postmaster-pid")) {
      absl::StatusOr<int64_t> pid = flags.GetInt("postmaster-pid", 1, 1 << 22);
      if (!pid.ok()) return pid.status();
      options.postmaster_pid = static_cast<pid_t>(*pid);
    }
  } else {
    if (flags.Has("postmaster-pid")) return absl::InvalidArgumentError("--postmaster-pid goes with --conninfo");
    if (flags.Has("bindir") && flags.Has("pg-versions")) {
      return absl::InvalidArgumentError("--bindir and --pg-versions both name the servers: give one");
    }
    if (flags.Has("bindir")) {
      absl::StatusOr<pgreal::Installation> i = pgreal::InstallationAt(flags.Get("bindir"));
      if (!i.ok()) return i.status();
      options.installations.push_back(*i);
    } else if (flags.Has("pg-versions")) {
      absl::StatusOr<std::vector<std::string>> versions = flags.GetList("pg-versions");
      if (!versions.ok()) return versions.status();
      for (const std::string& v : *versions) {
        absl::StatusOr<int> major = ParseMajor(v);
        if (!major.ok()) return major.status();
        absl::StatusOr<pgreal::Installation> i = pgreal::InstallationOfMajor(*major, pgreal::FetchedPostgresDir());
        if (!i.ok()) return i.status();
        options.installations.push_back(*i);
      }
    } else {
      absl::StatusOr<pgreal::Installation> i = pgreal::DefaultInstallation();
      if (!i.ok()) return i.status();
      options.installations.push_back(*i);
    }
    absl::StatusOr<std::vector<std::string>> sizes =
        flags.Has("shared-buffers") ? flags.GetList("shared-buffers")
                                    : absl::StatusOr<std::vector<std::string>>(std::vector<std::string>{"128MB", "8GB"});
    if (!sizes.ok()) return sizes.status();
    for (const std::string& text : *sizes) {
      absl::StatusOr<buffers::SharedBuffers> size = buffers::ParseSharedBuffers(text);
      if (!size.ok()) return absl::InvalidArgumentError(absl::StrCat("--shared-buffers: ", size.status().message()));
      for (int64_t seen : options.shared_buffers) {
        if (seen == static_cast<int64_t>(size->bytes)) {
          return absl::InvalidArgumentError(absl::StrCat("--shared-buffers: ", Quoted(text), " given twice"));
        }
      }
      options.shared_buffers.push_back(static_cast<int64_t>(size->bytes));
    }
    if (geteuid() != 0 && flags.Has("run-as")) {
      return absl::InvalidArgumentError("--run-as needs root: otherwise the server runs as you");
    }
    if (flags.Has("run-as")) options.server.run_as = flags.Get("run-as");
    absl::StatusOr<bool> tcp = flags.GetBool("tcp");
    absl::StatusOr<bool> keep = flags.GetBool("keep");
    if (!tcp.ok()) return tcp.status();
    if (!keep.ok()) return keep.status();
    options.server.tcp = *tcp;
    options.server.keep = *keep;
    if (flags.Has("set")) {
      for (absl::string_view item : absl::StrSplit(flags.Get("set"), ',')) {
        const size_t eq = item.find('=');
        if (eq == absl::string_view::npos || eq == 0) {
          return absl::InvalidArgumentError(absl::StrCat("--set: ", Quoted(std::string(item)), " is not NAME=VALUE"));
        }
        std::string name(item.substr(0, eq));
        std::string value(item.substr(eq + 1));
        if (absl::Status s = pgreal::ValidateOverride(name, value); !s.ok()) return s;
        options.server.overrides.emplace_back(std::move(name), std::move(value));
      }
    }
  }
  absl::StatusOr<int64_t> rounds = flags.GetInt("rounds", 1, 1000);
  absl::StatusOr<double> precision = flags.GetNumber("precision", 0, 100);
  if (!precision.ok()) return precision.status();
  options.precision.half_width = *precision / 100;
  if (flags.Has("max-time")) {
    absl::StatusOr<int64_t> ms = ParseDurationMs(flags.Get("max-time"));
    if (!ms.ok()) return absl::InvalidArgumentError(absl::StrCat("--max-time: ", ms.status().message()));
    options.precision.max_time = absl::Milliseconds(*ms);
  }
  absl::StatusOr<int64_t> seed = flags.GetInt("seed", 0, INT64_MAX);
  if (!seed.ok()) return seed.status();
  options.seed = static_cast<uint64_t>(*seed);
  absl::StatusOr<std::vector<int64_t>> clients = flags.GetIntList("clients", 1, 1000);
  absl::StatusOr<int64_t> warmup = flags.GetInt("warmup", 0, 1'000'000);
  absl::StatusOr<bool> counters = flags.GetBool("server-counters");
  for (const absl::Status& s : {rounds.status(), clients.status(), warmup.status(), counters.status()}) {
    if (!s.ok()) return s;
  }
  options.rounds = *rounds;
  for (int64_t c : *clients) options.clients.push_back(static_cast<int>(c));
  options.loop.clients = options.clients.front();
  options.loop.warmup = *warmup;
  options.server_counters = *counters;
  // One server serves every --clients entry: room for the most.
  options.server.max_connections = *std::max_element(options.clients.begin(), options.clients.end()) + 5;
  if (flags.Has("connections") && flags.Has("duration")) {
    return absl::InvalidArgumentError("--connections and --duration both end a run: give one");
  }
  if (flags.Has("duration")) {
    absl::StatusOr<int64_t> ms = ParseDurationMs(flags.Get("duration"));
    if (!ms.ok()) return ms.status();
    options.loop.duration_ns = *ms * 1'000'000;
  } else {
    absl::StatusOr<int64_t> n = flags.Has("connections") ? flags.GetInt("connections", 1, 100'000'000) : 300;
    if (!n.ok()) return n.status();
    options.loop.connections = *n;
  }
  options.loop.query = flags.Get("query");
  if (flags.Has("via")) {
    absl::StatusOr<std::vector<std::string>> vias = flags.GetList("via");
    if (!vias.ok()) return vias.status();
    absl::StatusOr<std::vector<pgreal::Via>> parsed = pgreal::ParseVias(*vias);
    if (!parsed.ok()) return parsed.status();
    options.via = *parsed;
  }
  if (flags.Has("pgbouncer") && options.via.empty()) return absl::InvalidArgumentError("--pgbouncer goes with --via");
  options.pgbouncer = flags.Get("pgbouncer");
  absl::StatusOr<std::vector<pgreal::Profiler>> profilers = ProfilersOf(flags);
  absl::StatusOr<int64_t> frequency = flags.Has("frequency") ? flags.GetInt("frequency", 1, 10'000) : 999;
  absl::StatusOr<int64_t> top_n = TopN(flags);  // used after the run
  for (const absl::Status& s : {profilers.status(), frequency.status(), top_n.status()}) {
    if (!s.ok()) return s;
  }
  options.profilers = *profilers;
  options.profile_options.frequency_hz = static_cast<int>(*frequency);
  for (const char* flag : {"out", "top", "frequency"}) {
    if (flags.Has(flag) && options.profilers.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, " goes with --profile"));
    }
  }
  return options;
}

// --explain-phases: the rules of each version named, without a server.
absl::Status ExplainPhasesOf(const Flags& flags, std::ostream& out) {
  std::vector<int> majors;
  if (flags.Has("pg-versions")) {
    absl::StatusOr<std::vector<std::string>> versions = flags.GetList("pg-versions");
    if (!versions.ok()) return versions.status();
    for (const std::string& v : *versions) {
      absl::StatusOr<int> major = ParseMajor(v);
      if (!major.ok()) return major.status();
      majors.push_back(*major);
    }
  } else {
    absl::StatusOr<pgreal::Installation> i =
        flags.Has("bindir") ? pgreal::InstallationAt(flags.Get("bindir")) : pgreal::DefaultInstallation();
    if (!i.ok()) return i.status();
    majors.push_back(i->major);
  }
  for (size_t i = 0; i < majors.size(); ++i) {
    if (i > 0) out << "\n";
    pgreal::ExplainPhases(out, majors[i]);
  }
  return absl::OkStatus();
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
      FlagsHelp(kFlags));
}

absl::Status RunPgCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kFlags);
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
                                                       : absl::StrCat(options->loop.duration_ns / 1'000'000, " ms"),
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

  const std::vector<ServerStats> stats = pgreal::ComputePgStats(result->targets);
  Report report = PgTable(*result, stats, options->precision.half_width);
  report.PrintText(out);
  out << "per connection; conn/s is the median of the rounds [95 % interval], connect and client CPU over the\n"
         "measured connections, the server's and the pooler's over every connection they served while counted\n"
         "(the warm-ups too); server CPU is each round's, its median [95 % interval], the other server columns\n"
         "over the whole run.\n"
         "server: the postmaster and every backend it forked in the run. server CPU, user, sys and faults: the\n"
         "kernel's accounting of the postmaster and its reaped children (CPU in clock ticks), as the mock's;\n"
         "task-clock, ctx sw and syscalls: perf, inherited.\n"
         "vs base: a pooled row over its server's direct row, a direct row over the first server listed;\n"
      << kRatioLegend << ".\n";
  if (options->precision.half_width > 0 && result->targets.size() < 2) {
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
