// `pg`'s table and the notes under it.
#include "tools/pg_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/server_usage.h"
#include "base/summary.h"
#include "lifecycle/compare.h"

namespace backendlab::tools {
namespace {

Cell PerConnectionCell(int64_t total, int64_t connections, double scale = 1) {
  if (total < 0 || connections <= 0) return std::monostate{};
  return static_cast<double>(total) * scale / static_cast<double>(connections);
}

// A figure per connection; -1 (not counted) is a missing value.
Cell Counted(double value) { return value < 0 ? Cell{} : Cell{value}; }

}  // namespace

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
                 {"client_cpu_us", "client CPU us", 1, ColumnKind::kMedian},
                 {"client_cpu_us_vs_baseline", "", 2, ColumnKind::kRatio},
                 {"connect_p50_us_vs_baseline", "", 2, ColumnKind::kRatio},
                 {"server_cpu_us", "server CPU us", 0, ColumnKind::kMedian},
                 {"server_cpu_us_vs_baseline", "CPU vs base", 2, ColumnKind::kRatio},
                 // The postmaster's own share, and the conn/s it caps a server at.
                 {"postmaster_cpu_us", "postmaster us", 1, ColumnKind::kMedian},
                 {"ceiling_connections_per_second", "ceiling conn/s", 0, ColumnKind::kMedian},
                 {"server_task_clock_us", "task-clock us"},
                 {"server_user_us", "user"},
                 {"server_system_us", "sys"},
                 {"server_minor_faults", "minor"},
                 {"server_major_faults", "major", 2},
                 {"server_context_switches", "ctx sw"},
                 {"server_syscalls", "syscalls"},
                 {"via", ""},
                 {"what_if", ""},
                 {"transport", ""},
                 // Connections held beside the loop (--hold): their number, the time to open them, what
                 // each held backend takes.
                 {"hold", ""},
                 {"hold_open_ms", "", 1, ColumnKind::kMedian},
                 {"hold_open_ms_per_connection", "", 3, ColumnKind::kMedian},
                 {"hold_open_ms_per_connection_vs_fewest", "", 2, ColumnKind::kRatio},
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
                 {"setup_total_ms", ""},
                 {"setup_total_ms_p90", ""},
                 {"setup_fork_ms", ""},
                 {"setup_fork_ms_p90", ""},
                 {"setup_authentication_ms", ""},
                 {"setup_authentication_ms_p90", ""},
                 {"setup_lines", ""},
                 {"server_backends", "backends"},
                 {"pooler_cpu_us", "pooler CPU us"},
                 {"connections", ""},
                 {"kept_directory", ""},
                 // Each round's figures, in round order, for a reader to pair again.
                 {"rounds_server_cpu_us", ""},
                 {"rounds_connections_per_second", ""},
                 {"rounds_postmaster_cpu_us", ""},
                 {"rounds_hold_open_ms", ""},
                 {"rounds_client_cpu_us", ""},
                 {"rounds_connect_p50_us", ""}});
  for (size_t i = 0; i < result.targets.size(); ++i) {
    const pgreal::PgTargetResult& t = result.targets[i];
    const ServerStats& st = result.stats[i];
    const Summary connect = t.loop.connect_ns.Summarize(1e-3);
    const int64_t n = t.loop.connections;
    const ServerUsage all = Merged(t.server_rounds);
    const PerConnection per = PerConnectionOf(all);
    const bool counted = !t.server_rounds.empty();
    const double rate = st.rate.median;
    const pgreal::ServerClock& clock = result.clocks[i];
    const bool timed = clock.timed && clock.lines > 0;
    auto ms = [&](double v) { return timed ? Cell{v} : Cell{}; };
    const pgreal::HoldStats& hold = result.holds[i];
    const pgreal::Saturation& saturation = result.saturation.rows[i];
    auto memory = [&](int64_t ProcessMemory::*field) { return hold.memory ? Cell{(*hold.memory).*field} : Cell{}; };
    auto fraction = [](double v) { return v < 0 ? Cell{} : Cell{v}; };
    report.AddRow({t.label, int64_t{t.clients}, t.installation.version, t.installation.build,
                   t.shared_buffers_bytes > 0 ? Cell{t.shared_buffers_bytes} : Cell{}, EstimateOf(st.rate),
                   RatioCell(st.rate_vs_baseline, precision), rate > 0 ? Cell{1e6 / rate} : Cell{}, connect.median, connect.p90,
                   connect.p99, EstimateOf(result.client_stats[i].cpu_us),
                   RatioCell(result.client_stats[i].cpu_vs_baseline), RatioCell(result.client_stats[i].connect_vs_baseline),
                   st.has_cpu ? Cell{EstimateOf(st.cpu_us)} : Cell{}, RatioCell(st.cpu_vs_baseline, precision),
                   st.has_postmaster_cpu ? Cell{EstimateOf(st.postmaster_cpu_us)} : Cell{},
                   st.has_postmaster_cpu ? Cell{EstimateOf(st.ceiling)} : Cell{},
                   counted ? Counted(per.task_clock_us) : Cell{},
                   counted ? Counted(per.user_us) : Cell{}, counted ? Counted(per.system_us) : Cell{},
                   counted ? Counted(per.minor_faults) : Cell{}, counted ? Counted(per.major_faults) : Cell{},
                   counted ? Counted(per.context_switches) : Cell{}, counted ? Counted(per.syscalls) : Cell{},
                   t.via.empty() ? Cell{} : Cell{t.via}, t.what_if.empty() ? Cell{} : Cell{t.what_if},
                   std::string(pgreal::TransportName(t.transport)), t.hold,
                   hold.held ? Cell{EstimateOf(hold.open_ms)} : Cell{},
                   hold.held ? Cell{EstimateOf(hold.open_ms_per_connection)} : Cell{},
                   hold.held ? RatioCell(hold.per_connection_vs_fewest) : Cell{}, memory(&ProcessMemory::rss_kb),
                   memory(&ProcessMemory::pss_kb), memory(&ProcessMemory::private_kb),
                   memory(&ProcessMemory::page_tables_kb), fraction(saturation.postmaster_busy),
                   fraction(saturation.cpus_busy), fraction(saturation.client_busy),
                   RatioCell(saturation.rate_vs_previous),
                   ms(clock.server.total_ms.median), ms(clock.server.total_ms.p90), ms(clock.server.fork_ms.median),
                   ms(clock.server.fork_ms.p90), ms(clock.server.authentication_ms.median),
                   ms(clock.server.authentication_ms.p90), clock.timed ? Cell{clock.lines} : Cell{}, t.server_backends >= 0 ? Cell{t.server_backends} : Cell{},
                   t.pooler_available ? PerConnectionCell(t.pooler_cpu_ns, all.connections, 1e-3) : Cell{}, n,
                   t.kept_directory.empty() ? Cell{} : Cell{t.kept_directory}, Values(CpuUsByRound(t.server_rounds)),
                   Values(t.rates),
                   Values(PerRound(t.server_rounds, [](const PerConnection& p) { return p.postmaster_cpu_us; })),
                   Values(t.hold_open_ms), Values(t.client_cpu_us), Values(t.connect_p50_us)});
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
      << kRatioLegend << ".\n";
  if (options.precision.half_width > 0 && !result.compared) {
    out << "precision: one server, no ratio to hold to it: --rounds and --max-time decide.\n";
  } else if (options.precision.half_width > 0) {
    const bool precise = result.worst_half_width <= options.precision.half_width;
    out << absl::StrFormat("precision: every vs-base ratio within +-%.3g %% %s after %d rounds (widest +-%.1f %%)",
                           100 * options.precision.half_width, precise ? "reached" : "NOT reached", result.run.rounds,
                           100 * result.worst_half_width)
        << (precise ? "" : "; * marks each ratio short of it (raise --rounds, --max-time or --connections)")
        << (result.run.timed_out ? "; --max-time ended the rounds" : "") << "\n";
  }
  if (!options.via.empty()) {
    out << "through a pooler: server columns are per client connection, the pooled backends' whole lives included;\n"
           "backends: the server's backends forked for the pooler over the run (new children of the postmaster at\n"
           "each loop's end); the direct rows fork one per connection.\n";
    for (const pgreal::PgTargetResult& t : result.targets) {
      if (t.via.empty()) continue;
      out << absl::StrFormat("%s: %d server backends for %d client connections\n", t.label, t.server_backends,
                             t.loop.connections + result.run.rounds * options.loop.warmup);
    }
  }
  if (!result.restored.empty()) out << result.restored << "\n";
  bool what_if = false;
  for (const pgreal::PgTargetResult& t : result.targets) what_if = what_if || !t.what_if.empty();
  if (what_if) {
    out << "+NAME: the stock server with one change (a what-if, pgreal/README.md), from a copy of the same data\n"
           "directory, measured in the same rounds:\n";
    std::vector<std::string> said;
    for (const pgreal::PgTargetResult& t : result.targets) {
      if (t.what_if.empty() || std::find(said.begin(), said.end(), t.what_if) != said.end()) continue;
      said.push_back(t.what_if);
      out << "  +" << t.what_if << ": " << pgreal::DescribeWhatIf(t.what_if) << "\n";
    }
    if (result.huge_pages_added > 0) {
      out << absl::StrFormat("  vm.nr_hugepages was grown by %d for the run, and put back after it\n",
                             result.huge_pages_added);
    }
  }
  if (!result.server_figures_note.empty()) out << "server-side figures " << result.server_figures_note << "\n";
  for (const pgreal::PgTargetResult& t : result.targets) {
    if (!t.kept_directory.empty() && t.via.empty()) out << "kept (--keep): " << t.label << ": " << t.kept_directory << "\n";
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
  if (result.targets.empty() || result.targets[0].installation.major == 0) return false;
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
    if (!t.via.empty()) continue;
    Cell total, fork, auth, lines;
    if (c.timed && c.lines > 0) {
      total = Ms(c.server.total_ms);
      fork = Ms(c.server.fork_ms);
      auth = Ms(c.server.authentication_ms);
      lines = c.missing > 0 ? absl::StrCat(c.lines, " (", c.missing, " missing)") : absl::StrCat(c.lines);
    } else if (c.timed) {
      total = std::string("no line logged");
    } else if (t.installation.major < 18) {
      total = std::string("the server does not time its set-up (18+)");
    } else {
      total = std::string("not logged in this row (its +setup-durations row logs)");
    }
    table.AddRow({t.label, Ms(c.connect_ms), total, fork, auth, lines, Us(c.fork_cpu_us), Us(c.auth_cpu_us),
                  Us(c.init_cpu_us)});
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
    if (!t.via.empty() || !c.timed || c.lines == 0) continue;
    const double connect = c.connect_ms.median;
    const double total = c.server.total_ms.median;
    if (Over20Percent(connect, total)) {
      out << absl::StrFormat(
          "%s: the tool's connect (%.3f ms) is %.0f %% over the server's total (%.3f ms): %.3f ms before accept() "
          "and after ReadyForQuery, the client's side of the exchange%s\n",
          t.label, connect, 100 * (connect / total - 1), total, connect - total,
          t.clients > 1 ? ", with other clients' connections queued at the postmaster" : "");
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
    if (t.what_if != "setup-durations") continue;
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

}  // namespace

void PrintManyConnections(const pgreal::PgResult& result, int cpus, std::ostream& out) {
  bool over_tcp = false;
  for (const pgreal::PgTargetResult& t : result.targets) over_tcp = over_tcp || t.transport != pgreal::Transport::kUnix;
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
      table.AddRow({result.targets[i].label, st.has_cpu ? Cell{EstimateOf(st.cpu_us)} : Cell{},
                    RatioCell(st.cpu_vs_baseline), EstimateOf(c.cpu_us), RatioCell(c.cpu_vs_baseline),
                    EstimateOf(c.connect_p50_us), RatioCell(c.connect_vs_baseline)});
    }
    out << "\nwhat a connection costs each side, by transport (--tcp, --ssl), per connection:\n";
    table.PrintText(out);
    out << "each round's figure, median [95 % interval]; vs base: over the same server's Unix-socket row (or the row's\n"
           "  own base), paired in the rounds. client CPU: the tool's libpq, with SCRAM its key derivation; connect:\n"
           "  each round's median PQconnectStart to CONNECTION_OK.\n";
  }
  bool held = false;
  for (const pgreal::PgTargetResult& t : result.targets) held = held || t.hold > 0;
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
      auto memory = [&](int64_t ProcessMemory::*field) { return h.memory ? Cell{(*h.memory).*field} : Cell{}; };
      table.AddRow({t.label, t.hold, h.held ? Cell{EstimateOf(h.open_ms)} : Cell{},
                    h.held ? Cell{EstimateOf(h.open_ms_per_connection)} : Cell{},
                    h.held ? RatioCell(h.per_connection_vs_fewest) : Cell{}, connect.median, connect.p99,
                    st.has_cpu ? Cell{EstimateOf(st.cpu_us)} : Cell{}, RatioCell(st.cpu_vs_baseline),
                    t.server_rounds.empty() ? Cell{} : Cell{per.minor_faults + per.major_faults},
                    st.has_postmaster_cpu ? Cell{EstimateOf(st.postmaster_cpu_us)} : Cell{},
                    memory(&ProcessMemory::private_kb), memory(&ProcessMemory::pss_kb), memory(&ProcessMemory::rss_kb),
                    memory(&ProcessMemory::page_tables_kb)});
    }
    out << "\nconnections held beside the loop (--hold), per row:\n";
    table.PrintText(out);
    out << "open ms: the time to open the held connections, a few at a time, each round's [95 % interval]; per conn:\n"
           "  over their number; vs fewest: that per-connection time over the row holding the fewest, paired in the\n"
           "  rounds: slower means opening N took more than N times one connection's share, growth faster than linear.\n"
           "connect, server CPU, faults, postmaster: the loop's new connections beside the held ones (the held\n"
           "  backends' own lives are not counted); CPU vs base: over the same server holding the fewest.\n"
           "held private kB: memory each held backend has alone (smaps_rollup's Private_Clean + Private_Dirty: what\n"
           "  its exit frees); PSS shares its shared pages among their mappers; RSS counts them whole; PTE: its page\n"
           "  tables (VmPTE). Each the median held backend of a round, the median over the rounds.\n";
  }
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
      table.AddRow({t.label, int64_t{t.clients}, EstimateOf(st.rate), RatioCell(s.rate_vs_previous),
                    st.has_postmaster_cpu ? Cell{EstimateOf(st.ceiling)} : Cell{},
                    Percent(s.postmaster_busy), Percent(s.cpus_busy), Percent(s.client_busy)});
    }
  }
  out << "\nconn/s against the postmaster's ceiling, as the clients grow (--clients):\n";
  table.PrintText(out);
  out << "vs fewer clients: conn/s over the row with the next fewer clients, paired in the rounds. busy: conn/s times\n"
         "  CPU per connection, as a share of what each can give: the postmaster's of its one core, the whole\n"
         "  server's and the client's of all "
      << cpus << " CPUs, the client's (the tool's loop, one thread) of one core.\n";
  for (const pgreal::SaturationSeries& series : result.saturation.series) {
    const std::string& name = result.targets[series.rows.front()].series;
    const size_t at = series.saturated_at.value_or(series.rows.back());
    const pgreal::Saturation& s = result.saturation.rows[at];
    if (series.saturated_at) {
      // A saturated row has a next: the one whose rate did not grow.
      const size_t next = *(std::find(series.rows.begin(), series.rows.end(), at) + 1);
      out << name << ": saturated at " << lifecycle::ClientsText(result.targets[at].clients) << ", as far as this run resolves: at "
          << result.targets[next].clients << " conn/s was "
          << TextOf(RatioCell(result.saturation.rows[next].rate_vs_previous), 2) << " of that";
    } else {
      out << name << ": conn/s still grew up to " << lifecycle::ClientsText(result.targets[at].clients)
          << ", the most asked for: not saturated in this run";
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

}  // namespace backendlab::tools
