// `backendlab pg`'s flags -> pgreal::PgRunOptions.
#include "base/scheduling.h"
#include "tools/pg_flags.h"

#include <libpq-fe.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "buffers/shared_buffers.h"
#include "pgreal/phase_rules.h"
#include "tools/cycle_flags.h"
#include "tools/exports_report.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kPgFlags[] = {
    {"bindir", "", "a PostgreSQL build's bin directory (default: Debian's PostgreSQL 15)"},
    {"pg-versions", "", "major versions, e.g. 15,17,18: Debian's where installed, else tools/fetch-postgres's"},
    {"shared-buffers", "", "shared_buffers of the servers, one server per size (default 128MB,8GB)"},
    {"rounds", "3", "interleaved rounds, at most: every server once per round, in a shuffled order; from 6 on, a server leaves them once its vs-base ratios are decided"},
    {"same-within", "2%", "a ratio whose whole 95 % interval lies within +-this of 1 is `same` (equivalent by two one-sided tests); between 0 and 50 %"},
    {"precision", "0", "percent: a ratio also needs its 95 % interval within +-this of it before it leaves the rounds (0: its verdict alone)"},
    {"require-decisive", "off", "exit 1 when a vs-base cost or rate ratio is still ~ at the end: on or off"},
    {"max-time", "", "no round is begun that would end past this, e.g. 2m (default: no limit)"},
    {"seed", "1", "seed of the rounds' shuffled orders and of the servers' starts"},
    {"randomise", "on", "each server starts with an environment size and a directory name length drawn afresh (the kernel draws its addresses): on or off"},
    {"scheduling", "realtime", "the client, the servers and their backends at SCHED_RR priority 1, ahead of every ordinary process, "
     "spin: realtime and every CPU kept from idling by a spinner at SCHED_IDLE besides; normal: the kernel's default; "
     "where realtime is refused the run says so and goes on at normal"},
    {"clients", "1", "connections in flight at once; a list (1,4) measures every server at each, conn/s at one client and at saturation (>= 2 x cores)"},
    {"connections", "", "measured connections per run (default 300 unless --duration)"},
    {"duration", "", "run for this long instead, e.g. 5s"},
    {"warmup", "20", "connections made first and left out"},
    {"query", "", "SQL sent once per connection, e.g. 'SELECT 1' (default: none)"},
    {"run-as", "", "as root: the unprivileged user the server runs as (default postgres)"},
    {"tcp", "off", "also listen on 127.0.0.1 (scram-sha-256) and measure connections through it, a row beside the Unix socket's: on or off"},
    {"ssl", "off", "with --tcp: also TLS (ssl=on, a throw-away certificate; sslmode=require), a third row: on or off"},
    {"hold", "", "connections held open while each loop runs, a row per entry, e.g. 0,256,1024: so many idle backends beside the loop's"},
    {"set", "", "server settings over the defaults, NAME=VALUE[,NAME=VALUE...]"},
    {"keep", "off", "leave each server's directory (data, log) after the run: on or off"},
    {"conninfo", "", "measure this existing server instead (libpq connection string); no start, no stop"},
    {"postmaster-pid", "", "with --conninfo: the server's postmaster, for server-side figures"},
    {"server-counters", "on", "perf counters on the postmaster, inherited by its backends: on or off"},
    {"via", "", "also through a pooler, a row per entry beside the direct one: pgbouncer[:session|:transaction][,...]"},
    {"pgbouncer", "", "with --via: the pgbouncer binary (default: on PATH, else /usr/sbin/pgbouncer)"},
    {"what-if", "", ""},  // its help names every what-if of the list: WhatIfHelp
    {"aa", "off", "an A/A check: beside each stock server a second copy, started from the same data directory, whose ratios must come out ~: on or off"},
    {"server-clock", "on", "on 18+, a setup-durations row beside each stock server: the server's own clock of every connection's set-up beside the tool's, and what that logging costs: on or off"},
    {"profile", "off", "after the rounds, two more loops per server, the second recorded: phases, top functions, flame graphs. on or perf: by perf record -a (DWARF call graphs); builtin: by the built-in sampler inside the server (LD_PRELOAD; no perf needed); builtin,perf: the same pass by both, their rankings compared"},
    {"explain-phases", "off", "print the phase rules --profile uses, for the chosen versions, and exit"},
    {"out", "", "with --profile: directory for the folded stacks and flame graphs, a subdirectory per server and profiler (default backendlab-pg-profile)"},
    {"top", "", "with --profile: functions in the top-N tables (default 15)"},
    {"frequency", "", "with --profile: samples per second, 1..10000 (default 999): perf's per CPU, the built-in sampler's per second of each process's CPU time"},
    {"json", "", "also write the results as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
    {"html", "", "also write one self-contained HTML page of the run: the table, a chart, with --profile the flame graphs and the timeline"},
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

}  // namespace

// --what-if's help, from the one list of what-ifs (pgreal/what_if/what_if_list.h).
const std::string& WhatIfHelp() {
  static const std::string help = [] {
    std::string names;
    for (const pgreal::WhatIfRow& row : pgreal::kWhatIfs) {
      absl::StrAppend(&names, names.empty() ? "" : ", ", row.name, row.kind == pgreal::WhatIfKind::kPreload ? "PATH" : "");
    }
    return absl::StrCat("also each server with one change, a row per entry beside the stock one, in the same rounds: ",
                        names, " (pgreal/README.md)");
  }();
  return help;
}

std::span<const FlagSpec> PgFlags() {
  static const std::vector<FlagSpec> all = [] {
    std::vector<FlagSpec> v(std::begin(kPgFlags), std::end(kPgFlags));
    for (FlagSpec& f : v) {
      if (f.name == "what-if") f.help = WhatIfHelp();
    }
    v.insert(v.end(), ExportFlagSpecs().begin(), ExportFlagSpecs().end());
    return v;
  }();
  return all;
}

absl::StatusOr<int64_t> TopN(const Flags& flags) { return flags.Has("top") ? flags.GetInt("top", 1, 1000) : 15; }
std::string ProfileDirectory(const Flags& flags) { return flags.Has("out") ? flags.Get("out") : "backendlab-pg-profile"; }

namespace {

// An existing server (--conninfo): checked by libpq before any connection.
absl::Status ExistingFromFlags(const Flags& flags, pgreal::PgRunOptions& options) {
  // What only a server the tool starts can take (--what-if and --via: the run refuses those itself).
  for (const char* owned : {"bindir", "pg-versions", "shared-buffers", "tcp", "ssl", "set", "keep", "run-as", "pgbouncer"}) {
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
  return absl::OkStatus();
}

// The servers the tool starts: installations x sizes, and their settings.
absl::Status ServersFromFlags(const Flags& flags, pgreal::PgRunOptions& options) {
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
  absl::StatusOr<bool> ssl = flags.GetBool("ssl");
  absl::StatusOr<bool> keep = flags.GetBool("keep");
  for (const absl::Status& s : {tcp.status(), ssl.status(), keep.status()}) {
    if (!s.ok()) return s;
  }
  if (*ssl && !*tcp) return absl::InvalidArgumentError("--ssl=on goes over TCP: add --tcp=on");
  options.server.tcp = *tcp;
  options.server.ssl = *ssl;
  options.server.keep = *keep;
  if (*tcp) options.transports.push_back(pgreal::Transport::kTcp);
  if (*ssl) options.transports.push_back(pgreal::Transport::kSsl);
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
  return absl::OkStatus();
}

// The rounds, the loop each row runs, the connections held beside it.
absl::Status LoopFromFlags(const Flags& flags, pgreal::PgRunOptions& options) {
  absl::StatusOr<int64_t> rounds = flags.GetInt("rounds", 1, 1000);
  absl::StatusOr<double> precision = flags.GetNumber("precision", 0, 100);
  if (!precision.ok()) return precision.status();
  options.precision.half_width = *precision / 100;
  absl::StatusOr<double> same_within = flags.GetPercent("same-within", 0, 50);
  if (!same_within.ok()) return same_within.status();
  options.same_within = *same_within;
  if (absl::StatusOr<bool> decisive = flags.GetBool("require-decisive"); !decisive.ok()) return decisive.status();
  if (flags.Has("max-time")) {
    absl::StatusOr<absl::Duration> max_time = ParseDuration(flags.Get("max-time"));
    if (!max_time.ok()) return absl::InvalidArgumentError(absl::StrCat("--max-time: ", max_time.status().message()));
    options.precision.max_time = *max_time;
  }
  absl::StatusOr<int64_t> seed = flags.GetInt("seed", 0, INT64_MAX);
  if (!seed.ok()) return seed.status();
  options.seed = static_cast<uint64_t>(*seed);
  absl::StatusOr<bool> randomise = flags.GetBool("randomise");
  if (!randomise.ok()) return randomise.status();
  options.randomise = *randomise;
  absl::StatusOr<Scheduling> scheduling = ParseScheduling(flags.Get("scheduling"));
  if (!scheduling.ok()) return absl::InvalidArgumentError(absl::StrCat("--scheduling: ", scheduling.status().message()));
  options.scheduling = *scheduling;
  absl::StatusOr<std::vector<int64_t>> clients = flags.GetIntList("clients", 1, kMaxClients);
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
  if (flags.Has("hold")) {
    absl::StatusOr<std::vector<int64_t>> hold = flags.GetIntList("hold", 0, pgreal::kMaxHold);
    if (!hold.ok()) return hold.status();
    options.hold = *hold;
  }
  // One server serves every --clients and --hold entry: room for the most
  // clients beside the most held.
  options.server.max_connections = *std::max_element(options.clients.begin(), options.clients.end()) + 5 +
                                   static_cast<int>(options.hold.empty() ? 0 : *std::max_element(options.hold.begin(), options.hold.end()));
  if (flags.Has("connections") && flags.Has("duration")) {
    return absl::InvalidArgumentError("--connections and --duration both end a run: give one");
  }
  if (flags.Has("duration")) {
    absl::StatusOr<absl::Duration> duration = ParseDuration(flags.Get("duration"));
    if (!duration.ok()) return duration.status();
    options.loop.duration = *duration;
  } else {
    absl::StatusOr<int64_t> n = flags.Has("connections") ? flags.GetInt("connections", 1, 100'000'000) : 300;
    if (!n.ok()) return n.status();
    options.loop.connections = *n;
  }
  return absl::OkStatus();
}

// The rows beside each stock one: through a pooler, with a change, a copy.
absl::Status ChangesFromFlags(const Flags& flags, bool existing, pgreal::PgRunOptions& options) {
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
  if (flags.Has("what-if")) {
    absl::StatusOr<std::vector<std::string>> names = flags.GetList("what-if");
    if (!names.ok()) return names.status();
    absl::StatusOr<std::vector<pgreal::WhatIf>> parsed = pgreal::ParseWhatIfs(*names);
    if (!parsed.ok()) return parsed.status();
    options.what_ifs = *parsed;
  }
  absl::StatusOr<bool> server_clock = flags.GetBool("server-clock");
  if (!server_clock.ok()) return server_clock.status();
  options.server_clock = *server_clock && !existing;
  absl::StatusOr<bool> aa = flags.GetBool("aa");
  if (!aa.ok()) return aa.status();
  options.aa = *aa;
  return absl::OkStatus();
}

// The profile after the rounds.
absl::Status ProfileFromFlags(const Flags& flags, pgreal::PgRunOptions& options) {
  absl::StatusOr<std::vector<pgreal::Profiler>> profilers = ProfilersOf(flags);
  absl::StatusOr<int64_t> frequency = flags.Has("frequency") ? flags.GetInt("frequency", 1, 10'000) : 999;
  absl::StatusOr<int64_t> top_n = TopN(flags);  // used after the run
  for (const absl::Status& s : {profilers.status(), frequency.status(), top_n.status()}) {
    if (!s.ok()) return s;
  }
  options.profilers = *profilers;
  options.profile_options.frequency_hz = static_cast<int>(*frequency);
  for (const char* flag : {"out", "top", "frequency", "pprof", "speedscope", "trace"}) {
    if (flags.Has(flag) && options.profilers.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, " goes with --profile"));
    }
  }
  // A trace is drawn from samples in time: perf's carry one, the built-in
  // sampler's do not.
  if (flags.Has("trace") &&
      std::find(options.profilers.begin(), options.profilers.end(), pgreal::Profiler::kPerf) == options.profilers.end()) {
    return absl::InvalidArgumentError(
        "--trace draws perf's samples in time; the built-in sampler's carry none: use --profile=perf or builtin,perf");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<pgreal::PgRunOptions> OptionsFromFlags(const Flags& flags) {
  pgreal::PgRunOptions options;
  const bool existing = flags.Has("conninfo");
  if (absl::Status s = existing ? ExistingFromFlags(flags, options) : ServersFromFlags(flags, options); !s.ok()) return s;
  if (absl::Status s = LoopFromFlags(flags, options); !s.ok()) return s;
  if (absl::Status s = ChangesFromFlags(flags, existing, options); !s.ok()) return s;
  if (absl::Status s = ProfileFromFlags(flags, options); !s.ok()) return s;
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

}  // namespace backendlab::tools
