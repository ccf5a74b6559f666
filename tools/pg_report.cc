// `pg`'s table and the notes under it.
#include "tools/pg_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/row_label.h"
#include "base/server_usage.h"
#include "base/summary.h"
#include "tools/flags.h"
#include "tools/server_columns.h"

namespace backendlab::tools {
namespace {

// A figure per connection; -1 (not counted) is a missing value.
Cell Counted(double value) { return value < 0 ? Cell{} : Cell{value}; }

// A row's identity, from its key (pgreal/target_key.h): the label and each
// part of it.
std::vector<Column> IdentityColumns() {
  return {{"server", "server"},
          {"clients", ""},
          {"version", ""},
          {"build", ""},
          {"shared_buffers_bytes", ""},
          {"via", ""},
          {"what_if", ""},
          {"transport", ""},
          {"hold", ""},
          {"aa", ""}};
}

void SetIdentity(Report::Row& row, const pgreal::PgTargetResult& t) {
  const pgreal::TargetKey& k = t.key;
  row.Set("server", t.label)
      .Set("clients", int64_t{k.clients})
      .Set("version", t.installation.version)
      .Set("build", t.installation.build)
      .Set("shared_buffers_bytes", k.shared_buffers_bytes > 0 ? Cell{k.shared_buffers_bytes} : Cell{})
      .Set("via", k.via ? Cell{k.via->label()} : Cell{})
      .Set("what_if", k.what_if ? Cell{k.what_if->name()} : Cell{})
      .Set("transport", std::string(pgreal::TransportName(k.transport)))
      .Set("hold", k.hold)
      .Set("aa", Boolean{k.copy > 0});
}

}  // namespace

Report PgTable(const pgreal::PgResult& result, double precision) {
  std::vector<Column> columns = IdentityColumns();
  for (Column& c : ServerColumns(ServerColumnsShown::kAll)) columns.push_back(std::move(c));
  for (Column c : std::initializer_list<Column>{
           {"us_per_connection", "us/conn"},
           {"connect_us_p50", "connect p50"},
           {"connect_us_p90", "p90"},
           {"connect_us_p99", "p99"},
           {"client_cpu_us", "client CPU us", 1, ColumnKind::kMedian},
           {"client_cpu_us_vs_baseline", "", 2, ColumnKind::kRatio},
           {"connect_us_p50_vs_baseline", "", 2, ColumnKind::kRatio},
           // Connections held beside the loop: the time to open them, what each held backend takes.
           {"hold_open_ms", "", 1, ColumnKind::kMedian},
           {"hold_open_ms_per_connection", "", 3, ColumnKind::kMedian},
           {"hold_open_ms_per_connection_vs_fewest_held", "", 2, ColumnKind::kRatio},
           {"held_rss_kb", ""},
           {"held_pss_kb", ""},
           {"held_private_kb", ""},
           {"held_page_tables_kb", ""},
           // Against the machine (pgreal/many_connections.h): fractions.
           {"postmaster_busy", ""},
           {"cpus_busy", ""},
           {"client_busy", ""},
           {"connections_per_second_vs_fewer_clients", "", 2, ColumnKind::kRatio},
           // The server's own clock (18+, log_connections=setup_durations), milliseconds.
           {"setup_total_ms_p50", ""},
           {"setup_total_ms_p90", ""},
           {"setup_fork_ms_p50", ""},
           {"setup_fork_ms_p90", ""},
           {"setup_authentication_ms_p50", ""},
           {"setup_authentication_ms_p90", ""},
           {"setup_lines", ""},
           {"server_backends", "backends"},
           {"pooler_cpu_us", "pooler CPU us"},
           {"connections", ""},
           {"kept_directory", ""},
           {"rounds_hold_open_ms", ""},
           {"rounds_client_cpu_us", ""},
           {"rounds_connect_us_p50", ""}}) {
    columns.push_back(std::move(c));
  }
  Report report(std::move(columns));
  for (size_t i = 0; i < result.targets.size(); ++i) {
    const pgreal::PgTargetResult& t = result.targets[i];
    const ServerStats& st = result.stats[i];
    const pgreal::ClientStats& client = result.client_stats[i];
    const Summary connect = t.loop.connect_ns.Summarize(1e-3);
    Report::Row row = report.NewRow();
    SetIdentity(row, t);
    SetServerCells(row, st, t.server_rounds, t.rates, precision);
    row.Set("us_per_connection", st.rate.median > 0 ? Cell{1e6 / st.rate.median} : Cell{})
        .Set("connect_us_p50", connect.median)
        .Set("connect_us_p90", connect.p90)
        .Set("connect_us_p99", connect.p99)
        .Set("client_cpu_us", EstimateOf(client.cpu_us))
        .Set("client_cpu_us_vs_baseline", RatioCell(client.cpu_vs_baseline))
        .Set("connect_us_p50_vs_baseline", Bucketed(RatioCell(client.connect_vs_baseline)))  // of histogram medians
        .Set("connections", t.loop.connections)
        .Set("kept_directory", t.kept_directory.empty() ? Cell{} : Cell{t.kept_directory})
        .Set("rounds_hold_open_ms", Values(t.hold_open_ms))
        .Set("rounds_client_cpu_us", Values(t.client_cpu_us))
        .Set("rounds_connect_us_p50", Values(t.connect_p50_us));
    if (const pgreal::HoldStats& hold = result.holds[i]; hold.held) {
      row.Set("hold_open_ms", EstimateOf(hold.open_ms))
          .Set("hold_open_ms_per_connection", EstimateOf(hold.open_ms_per_connection))
          .Set("hold_open_ms_per_connection_vs_fewest_held", RatioCell(hold.per_connection_vs_fewest));
    }
    if (const std::optional<ProcessMemory>& m = result.holds[i].memory) {
      row.Set("held_rss_kb", m->rss_kb)
          .Set("held_pss_kb", m->pss_kb)
          .Set("held_private_kb", m->private_kb)
          .Set("held_page_tables_kb", m->page_tables_kb);
    }
    const pgreal::Saturation& saturation = result.saturation.rows[i];
    row.Set("postmaster_busy", Counted(saturation.postmaster_busy))
        .Set("cpus_busy", Counted(saturation.cpus_busy))
        .Set("client_busy", Counted(saturation.client_busy))
        .Set("connections_per_second_vs_fewer_clients", RatioCell(saturation.rate_vs_previous));
    if (const pgreal::ServerClock& clock = result.clocks[i]; clock.timed) {
      row.Set("setup_lines", clock.lines);
      if (clock.lines > 0) {
        row.Set("setup_total_ms_p50", clock.server.total_ms.median)
            .Set("setup_total_ms_p90", clock.server.total_ms.p90)
            .Set("setup_fork_ms_p50", clock.server.fork_ms.median)
            .Set("setup_fork_ms_p90", clock.server.fork_ms.p90)
            .Set("setup_authentication_ms_p50", clock.server.authentication_ms.median)
            .Set("setup_authentication_ms_p90", clock.server.authentication_ms.p90);
      }
    }
    if (t.server_backends >= 0) row.Set("server_backends", t.server_backends);
    if (t.pooler_available) {
      row.Set("pooler_cpu_us", Counted(PerConnectionValue(t.pooler_cpu_ns, Merged(t.server_rounds).connections, 1e-3)));
    }
    report.AddRow(std::move(row));
  }
  return report;
}

void PrintPgNotes(const pgreal::PgResult& result, const pgreal::PgRunOptions& options, std::ostream& out) {
  out << "per connection; conn/s is the median of the rounds [95 % interval], connect and client CPU over the\n"
         "measured connections, the server's and the pooler's over every connection they served while counted\n"
         "(the warm-ups too); server CPU is each round's, its median [95 % interval], the other server columns\n"
         "over the whole run.\n"
         "server: the postmaster and every backend it forked in the run. server CPU, user, sys and faults: the\n"
         "kernel's accounting of the postmaster and its reaped children (CPU in clock ticks), as the mock's;\n"
         "task-clock, ctx sw and syscalls: perf, inherited. postmaster: its own CPU alone (/proc/PID/schedstat, ns),\n"
         "included in server CPU; ceiling: one CPU-second over it, the conn/s a postmaster doing nothing else\n"
         "could reach on one core (each round's, median [95 % interval]).\n"
         "vs base: at the same clients, one change at a time: a pooled row or a what-if over its stock server's\n"
         "direct row, a row over TCP over the same server's through its Unix socket, a row holding connections\n"
         "over the same server's holding the fewest (--hold), any other row over the first server listed;\n"
      << "paired: A over B within each round, geometric mean over the rounds [interval], then a verdict:\n"
      << VerdictLegend(result.rule);
  if (!result.compared) {
    if (options.precision.half_width > 0) out << "precision: one server, no ratio to hold to it: --rounds and --max-time decide.\n";
  } else {
    PrintDecisionNotes(result.undecided, result.run.rounds, options.precision.half_width,
                       result.worst_half_width <= options.precision.half_width, result.worst_half_width, out);
  }
  if (!options.via.empty()) {
    out << "through a pooler: server columns are per client connection, the pooled backends' whole lives included;\n"
           "backends: the server's backends forked for the pooler over the run (new children of the postmaster at\n"
           "each loop's end); the direct rows fork one per connection.\n";
    for (const pgreal::PgTargetResult& t : result.targets) {
      if (!t.key.via) continue;
      out << absl::StrFormat("%s: %d server backends for %d client connections\n", t.label, t.server_backends,
                             t.loop.connections + result.run.rounds * options.loop.warmup);
    }
  }
  if (!result.restored.empty()) out << result.restored << "\n";
  bool what_if = false;
  for (const pgreal::PgTargetResult& t : result.targets) what_if = what_if || t.key.what_if.has_value();
  if (what_if) {
    out << "+NAME: the stock server with one change (a what-if, pgreal/README.md), from a copy of the same data\n"
           "directory, measured in the same rounds:\n";
    std::vector<pgreal::WhatIf> said;
    for (const pgreal::PgTargetResult& t : result.targets) {
      if (!t.key.what_if || std::find(said.begin(), said.end(), *t.key.what_if) != said.end()) continue;
      said.push_back(*t.key.what_if);
      out << "  +" << t.key.what_if->name() << ": " << t.key.what_if->description() << "\n";
    }
    if (!result.huge_pages_released.empty()) out << "  " << result.huge_pages_released << "\n";
  }
  if (!result.server_figures_note.empty()) out << "server-side figures " << InFlagWords(result.server_figures_note) << "\n";
  for (const pgreal::PgTargetResult& t : result.targets) {
    if (!t.kept_directory.empty() && !t.key.via) out << "kept (--keep): " << t.label << ": " << t.kept_directory << "\n";
  }
  if (!options.server_counters) out << "server counters off (--server-counters=off): their columns are empty.\n";
  if (!result.targets.empty()) {
    for (const std::string& why : result.targets[0].server_events_unavailable) out << why << "\n";
  }
}

}  // namespace backendlab::tools

namespace backendlab::tools {
namespace {

std::string Ms(const Summary& s) { return absl::StrFormat("%.3f / %.3f", s.median, s.p90); }
std::string Us(double v) { return v < 0 ? std::string() : absl::StrFormat("%.0f", v); }
bool Over20Percent(double a, double b) { return b > 0 && (a > 1.2 * b || a < b / 1.2); }

}  // namespace

bool PrintServerClock(const pgreal::PgResult& result, std::ostream& out) {
  bool any_timed = false;
  for (const pgreal::ServerClock& c : result.clocks) any_timed = any_timed || c.timed;
  if (result.targets.empty() || result.targets[0].key.major == 0) return false;
  Report table({{"server", "server"},
                {"connect", "tool: connect ms p50 / p90"},
                {"total", "server: setup total"},
                {"fork", "fork"},
                {"authentication", "authentication"},
                {"lines", "lines"},
                {"fork_cpu", "tool CPU us: fork"},
                {"auth_cpu", "auth"},
                {"init_cpu", "init"}});
  for (size_t i = 0; i < result.targets.size(); ++i) {
    const pgreal::PgTargetResult& t = result.targets[i];
    const pgreal::ServerClock& c = result.clocks[i];
    if (t.key.via) continue;
    Cell total, fork, auth, lines;
    if (c.timed && c.lines > 0) {
      total = Ms(c.server.total_ms);
      fork = Ms(c.server.fork_ms);
      auth = Ms(c.server.authentication_ms);
      lines = c.missing > 0 ? absl::StrCat(c.lines, " (", c.missing, " missing)") : absl::StrCat(c.lines);
    } else if (c.timed) {
      total = std::string("no line logged");
    } else if (t.key.major < 18) {
      total = std::string("the server does not time its set-up (18+)");
    } else {
      total = std::string("not logged in this row (its +setup-durations row logs)");
    }
    Report::Row row = table.NewRow();
    row.Set("server", t.label)
        .Set("connect", Ms(c.connect_ms))
        .Set("total", total)
        .Set("fork", fork)
        .Set("authentication", auth)
        .Set("lines", lines)
        .Set("fork_cpu", Us(c.fork_cpu_us))
        .Set("auth_cpu", Us(c.auth_cpu_us))
        .Set("init_cpu", Us(c.init_cpu_us));
    table.AddRow(std::move(row));
  }
  out << "\nthe server's own clock (log_connections=setup_durations, 18+) beside the tool's, ms median / p90:\n";
  table.PrintText(out);
  if (!any_timed) return true;
  out << "setup total: from the socket's creation after the postmaster's accept() to before the first ReadyForQuery;\n"
         "the tool's connect also holds the socket's connect, the accept queue, the ReadyForQuery's way back and\n"
         "libpq's own work, so it is longer. fork: from just before fork() in the postmaster to the child's first\n"
         "statement, its wait for a CPU included. authentication: ClientAuthentication() (trust on the private\n"
         "Unix socket; a password exchange with --tcp). All wall times; the tool's CPU columns (--profile) are CPU.\n";
  for (size_t i = 0; i < result.targets.size(); ++i) {
    const pgreal::PgTargetResult& t = result.targets[i];
    const pgreal::ServerClock& c = result.clocks[i];
    if (t.key.via || !c.timed || c.lines == 0) continue;
    const double connect = c.connect_ms.median;
    const double total = c.server.total_ms.median;
    if (Over20Percent(connect, total)) {
      out << absl::StrFormat(
          "%s: the tool's connect (%.3f ms) is %.0f %% over the server's total (%.3f ms): %.3f ms before accept() "
          "and after ReadyForQuery, the client's side of the exchange%s\n",
          t.label, connect, 100 * (connect / total - 1), total, connect - total,
          t.key.clients > 1 ? ", with other clients' connections queued at the postmaster" : "");
    }
    if (c.fork_cpu_us >= 0 && Over20Percent(c.server.fork_ms.median * 1000, c.fork_cpu_us)) {
      out << absl::StrFormat(
          "%s: fork's wall time (%.0f us) against the CPU the tool attributes to fork (%.0f us per connection): the "
          "wall time %s\n",
          t.label, c.server.fork_ms.median * 1000, c.fork_cpu_us,
          c.server.fork_ms.median * 1000 > c.fork_cpu_us
              ? "holds the child's wait to be scheduled and the parent's return from fork()"
              : "ends at the child's first statement; the tool's fork phase also holds the child's post-fork set-up "
                "and the postmaster's bookkeeping of it");
    }
  }
  for (size_t i = 0; i < result.targets.size(); ++i) {
    const pgreal::PgTargetResult& t = result.targets[i];
    if (!t.key.what_if || t.key.what_if->kind != pgreal::WhatIfKind::kSetupDurations) continue;
    const ServerStats& st = result.stats[i];
    out << t.label << ": what the logging costs (this row over its stock one, paired in the rounds): conn/s "
        << TextOf(RatioCell(st.rate_vs_baseline), 2) << ", server CPU "
        << TextOf(RatioCell(st.cpu_vs_baseline), 2) << "\n";
  }
  return true;
}


namespace {

std::string Percent(double fraction) { return fraction < 0 ? std::string("-") : absl::StrFormat("%.0f %%", 100 * fraction); }

std::string BoundText(std::string_view bound, int cpus) {
  if (bound == pgreal::kBoundPostmaster) return "the postmaster (its one core)";
  if (bound == pgreal::kBoundCpus) return absl::StrCat("the CPUs (all ", cpus, ")");
  if (bound == pgreal::kBoundClient) return "the client (the tool's loop, one core)";
  return "";
}


// What a connection costs each side by transport (--tcp, --ssl).
void PrintTransports(const pgreal::PgResult& result, std::ostream& out) {
  bool over_tcp = false;
  for (const pgreal::PgTargetResult& t : result.targets) over_tcp = over_tcp || t.key.transport != pgreal::Transport::kUnix;
  if (over_tcp) {
    Report table({{"server", "server"},
                  {"server_cpu", "server CPU us", 0, ColumnKind::kMedian},
                  {"server_vs", "vs base", 2, ColumnKind::kRatio},
                  {"client_cpu", "client CPU us", 0, ColumnKind::kMedian},
                  {"client_vs", "vs base", 2, ColumnKind::kRatio},
                  {"connect", "connect p50 us", 0, ColumnKind::kMedian},
                  {"connect_vs", "vs base", 2, ColumnKind::kRatio}});
    for (size_t i = 0; i < result.targets.size(); ++i) {
      const ServerStats& st = result.stats[i];
      const pgreal::ClientStats& c = result.client_stats[i];
      Report::Row row = table.NewRow();
      row.Set("server", result.targets[i].label)
          .Set("server_cpu", st.has_cpu ? Cell{EstimateOf(st.cpu_us)} : Cell{})
          .Set("server_vs", RatioCell(st.cpu_vs_baseline))
          .Set("client_cpu", EstimateOf(c.cpu_us))
          .Set("client_vs", RatioCell(c.cpu_vs_baseline))
          .Set("connect", Bucketed(EstimateOf(c.connect_p50_us)))
          .Set("connect_vs", Bucketed(RatioCell(c.connect_vs_baseline)));
      table.AddRow(std::move(row));
    }
    out << "\nwhat a connection costs each side, by transport (--tcp, --ssl), per connection:\n";
    table.PrintText(out);
    out << "each round's figure, median [95 % interval]; vs base: over the same server's Unix-socket row (or the row's\n"
           "  own base), paired in the rounds. client CPU: the tool's libpq, with SCRAM its key derivation; connect:\n"
           "  each round's median PQconnectStart to CONNECTION_OK.\n";
    out << BucketedLegend() << ".\n";
  }
}

// Connections held beside the loop (--hold).
void PrintHolds(const pgreal::PgResult& result, std::ostream& out) {
  bool held = false;
  for (const pgreal::PgTargetResult& t : result.targets) held = held || t.key.hold > 0;
  if (held) {
    Report table({{"server", "server"},
                  {"hold", "hold"},
                  {"open", "open ms"},
                  {"per", "per conn ms"},
                  {"vs", "per conn vs fewest", 2, ColumnKind::kRatio},
                  {"p50", "connect p50 us"},
                  {"p99", "p99"},
                  {"cpu", "server CPU us", 0, ColumnKind::kMedian},
                  {"vs_base", "CPU vs base", 2, ColumnKind::kRatio},
                  {"faults", "faults"},
                  {"postmaster", "postmaster us", 1, ColumnKind::kMedian},
                  {"private", "held private kB"},
                  {"pss", "PSS kB"},
                  {"rss", "RSS kB"},
                  {"pte", "PTE kB"}});
    for (size_t i = 0; i < result.targets.size(); ++i) {
      const pgreal::PgTargetResult& t = result.targets[i];
      const pgreal::HoldStats& h = result.holds[i];
      const ServerStats& st = result.stats[i];
      const Summary connect = t.loop.connect_ns.Summarize(1e-3);
      const PerConnection per = PerConnectionOf(Merged(t.server_rounds));
      Report::Row row = table.NewRow();
      row.Set("server", t.label)
          .Set("hold", t.key.hold)
          .Set("p50", connect.median)
          .Set("p99", connect.p99)
          .Set("cpu", st.has_cpu ? Cell{EstimateOf(st.cpu_us)} : Cell{})
          .Set("vs_base", RatioCell(st.cpu_vs_baseline))
          .Set("faults", t.server_rounds.empty() ? Cell{} : Cell{per.minor_faults + per.major_faults})
          .Set("postmaster", st.has_postmaster_cpu ? Cell{EstimateOf(st.postmaster_cpu_us)} : Cell{});
      if (h.held) {
        row.Set("open", EstimateOf(h.open_ms))
            .Set("per", EstimateOf(h.open_ms_per_connection))
            .Set("vs", RatioCell(h.per_connection_vs_fewest));
      }
      if (h.memory) {
        row.Set("private", h.memory->private_kb)
            .Set("pss", h.memory->pss_kb)
            .Set("rss", h.memory->rss_kb)
            .Set("pte", h.memory->page_tables_kb);
      }
      table.AddRow(std::move(row));
    }
    out << "\nconnections held beside the loop (--hold), per row:\n";
    table.PrintText(out);
    out << "open ms: the time to open the held connections, a few at a time, each round's [95 % interval]; per conn:\n"
           "  over their number; vs fewest: that per-connection time over the row holding the fewest, paired in the\n"
           "  rounds: slower means opening N took more than N times one connection's share, growth faster than linear.\n"
           "connect, server CPU, faults, postmaster: the loop's new connections beside the held ones (the held\n"
           "  backends' own lives are not counted); CPU vs base: over the row's base, as in the first table (a row\n"
           "  holding connections over the same server holding the first --hold entry's; that row over the first server).\n"
           "held private kB: memory each held backend has alone (smaps_rollup's Private_Clean + Private_Dirty: what\n"
           "  its exit frees); PSS shares its shared pages among their mappers; RSS counts them whole; PTE: its page\n"
           "  tables (VmPTE). Each the median held backend of a round, the median over the rounds.\n";
  }
}

// Each series of clients: saturated (where, and the step that shows it),
// not resolved (the step that does not, or the later step that grew
// again), or still growing; then what was busiest there.
void PrintSaturationFindings(const pgreal::PgResult& result, int cpus, std::ostream& out) {
  // A step of a series: "conn/s at 4 clients over 2 clients: 1.020 [0.907, 1.154] ~".
  auto step = [&](size_t row) {
    const pgreal::Saturation& r = result.saturation.rows[row];
    return absl::StrCat("conn/s at ", ClientsText(result.targets[row].key.clients), " over ",
                        ClientsText(result.targets[r.previous.value_or(row)].key.clients), ": ",
                        TextOf(RatioCell(r.rate_vs_previous), 2));
  };
  const double margin = 100 * (pgreal::kSaturationMargin - 1);
  for (const pgreal::SaturationSeries& series : result.saturation.series) {
    const std::string name = result.targets[series.rows.front()].key.Label({.clients = false, .hold = result.shows.hold});
    const size_t at = series.saturated_at.value_or(series.rows.back());
    const pgreal::Saturation& s = result.saturation.rows[at];
    const std::string where = ClientsText(result.targets[at].key.clients);
    if (series.finding == pgreal::SaturationFinding::kSaturated) {
      out << name << ": saturated at " << where << ": " << step(*series.first_not_faster)
          << absl::StrFormat(", a gain of %.0f %% or more ruled out, and no later step faster", margin);
    } else if (series.finding == pgreal::SaturationFinding::kNotResolved) {
      const std::optional<RatioEstimate>& flat = result.saturation.rows[*series.first_not_faster].rate_vs_previous;
      out << name << ": saturation not resolved: " << step(*series.first_not_faster);
      if (!flat || !flat->has_interval) {
        out << " (no interval)";
      } else if (flat->interval.high >= pgreal::kSaturationMargin) {
        out << absl::StrFormat(" (up to %+.0f %%: a gain of %.0f %% or more not ruled out)", 100 * (flat->interval.high - 1),
                               margin);
      }
      if (series.later_faster) out << ", then grew again: " << step(*series.later_faster);
      out << "; at " << where << ", the most asked for";
    } else {
      out << name << ": conn/s still grew at every step up to " << where << ", the most asked for: not saturated in this run";
    }
    if (series.bound.empty()) {
      out << "; nothing counted was over " << Percent(pgreal::kBusyBound) << " busy there (the postmaster "
          << Percent(s.postmaster_busy) << ", the CPUs " << Percent(s.cpus_busy) << ", the client "
          << Percent(s.client_busy) << ")\n";
    } else {
      const double busy = series.bound == pgreal::kBoundPostmaster ? s.postmaster_busy
                          : series.bound == pgreal::kBoundCpus     ? s.cpus_busy
                                                                   : s.client_busy;
      out << "; busiest there: " << BoundText(series.bound, cpus) << ", " << Percent(busy) << " (the postmaster "
          << Percent(s.postmaster_busy) << " of its core)\n";
    }
  }
}

// conn/s against the postmaster's ceiling as the clients grow (--clients).
void PrintSaturation(const pgreal::PgResult& result, int cpus, std::ostream& out) {
  if (result.saturation.series.empty()) return;
  Report table({{"server", "server"},
                {"clients", "clients"},
                {"rate", "conn/s", 0, ColumnKind::kMedian},
                {"vs", "vs fewer clients", 2, ColumnKind::kRatio},
                {"ceiling", "ceiling conn/s", 0, ColumnKind::kMedian},
                {"postmaster", "postmaster busy"},
                {"cpus", "CPUs busy"},
                {"client", "client busy"}});
  for (const pgreal::SaturationSeries& series : result.saturation.series) {
    for (size_t i : series.rows) {
      const pgreal::PgTargetResult& t = result.targets[i];
      const ServerStats& st = result.stats[i];
      const pgreal::Saturation& s = result.saturation.rows[i];
      Report::Row row = table.NewRow();
      row.Set("server", t.label)
          .Set("clients", int64_t{t.key.clients})
          .Set("rate", EstimateOf(st.rate))
          .Set("vs", RatioCell(s.rate_vs_previous))
          .Set("ceiling", st.has_postmaster_cpu ? Cell{EstimateOf(st.ceiling)} : Cell{})
          .Set("postmaster", Percent(s.postmaster_busy))
          .Set("cpus", Percent(s.cpus_busy))
          .Set("client", Percent(s.client_busy));
      table.AddRow(std::move(row));
    }
  }
  out << "\nconn/s against the postmaster's ceiling, as the clients grow (--clients):\n";
  table.PrintText(out);
  out << "vs fewer clients: conn/s over the row with the next fewer clients, paired in the rounds. busy: conn/s times\n"
         "  CPU per connection, as a share of what each can give: the postmaster's of its one core, the whole\n"
         "  server's and the client's of all "
      << cpus << " CPUs, the client's (the tool's loop, one thread) of one core.\n";
  PrintSaturationFindings(result, cpus, out);
}

}  // namespace

void PrintManyConnections(const pgreal::PgResult& result, int cpus, std::ostream& out) {
  PrintTransports(result, out);
  PrintHolds(result, out);
  PrintSaturation(result, cpus, out);
}

}  // namespace backendlab::tools
