// `pg`'s table and the notes under it.
#include "tools/pg_report.h"

#include "absl/strings/str_format.h"
#include "base/server_usage.h"
#include "base/summary.h"

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

void PrintPgNotes(const pgreal::PgResult& result, const pgreal::PgRunOptions& options, std::ostream& out) {
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
