// `backendlab cycle`: connect/disconnect loops against one configuration, with
// per-phase costs and the machine's bare fork rate measured in the same run.
#include "tools/cycle_command.h"

#include <unistd.h>

#include <cstring>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "buffers/shared_buffers.h"
#include "lifecycle/cycle.h"
#include "lifecycle/cycle_summary.h"
#include "tools/cycle_flags.h"
#include "tools/cycle_report.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"
#include "tools/progress.h"
#include "waits/wait_set.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kCycleFlags[] = {
    {"mode", "fork", "fork: a postmaster forks a backend per connection; thread: a thread of one server process per connection; prefork: a pool of pre-forked backends, each reset between connections; inproc: no fork"},
    {"pool", "", "prefork mode: the pre-forked backends, at least --hold + --clients (default: --hold + --clients + 1)"},
    {"reap", "any", "fork mode: how the postmaster reaps its backends: any (waitpid(-1) until it returns 0, as PostgreSQL's postmaster does) or pidfd (each backend's pidfd in an epoll set, then wait4 on that pid alone)"},
    {"thread-memory", "fresh", "thread mode: a backend's private memory from fresh mappings (fresh) or from its slot's arena, reused across connections (reuse)"},
    {"layout", "hash", "refcount table layout: array, bytes, hash, hash-keys or array-touched"},
    {"exit-check", "assert", "exit-check policy: always, assert or off"},
    {"kernel", "simd", "how the exit check scans array and bytes: naive (9.0's loop), word or simd"},
    {"shared-buffers", "8GB", "shared_buffers (NBuffers = size / 8kB)"},
    {"catcache", "palloc0", "catcache bucket strategy: palloc0, bss, expansible or mmap"},
    {"syscache", "pg17", "syscache profile: pg90 or pg17"},
    {"clients", "1", "concurrent clients"},
    {"connections", "", "measured connections (default 500 unless --duration)"},
    {"duration", "", "run for this long instead, e.g. 10s or 500ms"},
    {"warmup", "20", "connections run first and left out"},
    {"hold", "0", "connections opened first and held, idle, while the loop runs (every server mode: fork, thread, prefork): so many backends beside the loop's"},
    {"work-pins", "20", "pin+unpin pairs per backend"},
    {"work-lookups", "100", "catcache lookups per backend"},
    {"queries", "0", "request/response round trips each backend serves after \"ready\", in its work phase (every server mode; a backend thread's latch is an eventfd, a process's a signalfd)"},
    {"wait", "long-lived", "how a backend waits for each query: per-call, long-lived, cached or poll (see backendlab waits)"},
    {"backend-profile", "", "a backend weight profile (JSON, written by calibrate): what each backend does on top of the model, to weigh what a real one weighs (every server mode)"},
    {"syscalls", "off", "count syscalls per phase (perf tracepoint; slows every backend's start): on or off"},
    {"counters", "", "perf events per phase, e.g. task-clock,context-switches,cycles (or sw, hw, all); each slows every backend's start"},
    {"leak-pins", "0", "plant a bug: pins each backend never releases"},
    {"kill-backend", "-1", "fault injection (every server mode): the backend of this connection number SIGKILLs itself (a thread takes the server with it; a pre-forked backend is replaced)"},
    {"json", "", "also write the results as JSON to this file"},
    {"csv", "", "also write the per-phase rows as CSV to this file"},
};

std::string Us(double v) { return v < 0 ? "-" : absl::StrFormat(v >= 100 ? "%.0f" : "%.1f", v); }

}  // namespace

std::span<const FlagSpec> CycleFlagSpecs() { return kCycleFlags; }

std::string CycleUsage() {
  return absl::StrCat(
      "usage: backendlab cycle [flags]\n"
      "Connect/disconnect loops (like pgbench -C) against a mock postmaster: connections/s,\n"
      "connect latency, and where each backend's life goes, phase by phase.\n\n",
      FlagsHelp(kCycleFlags));
}

absl::Status RunCycleCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kCycleFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<lifecycle::CycleOptions> options = CycleOptionsFromFlags(*flags);
  if (!options.ok()) return options.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  ProgressLine progress;
  options->progress = progress.Callback();
  absl::StatusOr<lifecycle::CycleResult> result = lifecycle::RunCycle(*options);
  progress.Clear();
  if (!result.ok()) return result.status();
  const lifecycle::CycleSummary s = lifecycle::Summarize(*result);
  const lifecycle::BackendConfig& b = options->backend;

  out << "backendlab cycle: " << ConfigLine(*options) << "\n";
  nlohmann::json header = MachineHeader();
  out << MachineLine(header) << "\n\n";
  out << absl::StrFormat("connections/s: %.1f   connect latency us: p50 %s  p90 %s  p99 %s   (%d measured, %d failed)\n",
                         s.connections_per_second, Us(s.connect_us.median), Us(s.connect_us.p90),
                         Us(s.connect_us.p99), result->connections, result->failed_connections);
  if (b.queries > 0) {
    out << absl::StrFormat("query round trip us: p50 %s  p90 %s  p99 %s   (%d queries per connection, %s wait)\n",
                           Us(s.query_us.median), Us(s.query_us.p90), Us(s.query_us.p99), b.queries,
                           waits::WaitStrategyName(b.wait));
  }
  const double floor_ratio =
      s.baseline_forks_per_second > 0 ? s.connections_per_second / s.baseline_forks_per_second : 0;
  out << absl::StrFormat(
      "bare fork+exit+wait in the same run: %.1f/s (median of %d) -> this configuration runs at %.2fx of that floor\n\n",
      s.baseline_forks_per_second, static_cast<int>(result->baseline_fork_ns.count()), floor_ratio);

  PrintServerUsage(*result, options->hold, out);
  Report report = PhaseReport(s, b.counters, lifecycle::BackendKindOf(options->mode));
  report.PrintText(out);
  out << absl::StrFormat("(between work and exit_check the backend waited %s us median for the client's terminate)\n",
                         Us(s.wait_us.median));
  const bool pooled = options->mode == lifecycle::Mode::kPrefork;
  out << absl::StrFormat("backends: %d exited, %d crashed, %d failed; buffer leaks reported by the exit check%s: %d\n",
                         s.exited, s.crashed, s.failed, pooled ? " or the reset" : "", s.leaks);
  if (pooled) {
    out << absl::StrFormat("pool: %d pre-forked backends, %d replaced after dying", lifecycle::PoolSize(*options),
                           result->replaced);
    if (result->pool_outside_cpu_ns >= 0 && result->server.connections > 0) {
      // Steady state: the server's figures leave the pool's start and end out.
      out << absl::StrFormat("; its build and end, left out of the server's figures: %.1f ms CPU (%.1f us per connection)",
                             result->pool_outside_cpu_ns / 1e6,
                             result->pool_outside_cpu_ns / 1e3 / static_cast<double>(result->server.connections));
    }
    out << "\n";
  }
  PrintIncidents(*result, out);
  for (const absl::Status& why : result->counters_unavailable) out << why.message() << "\n";
  if (b.exit_check == buffers::ExitCheckPolicy::kAssert && !kAssertChecking) {
    out << "exit-check assert: this build has no assert checking, so the check is compiled out.\n";
  }

  header["command"] = "cycle";
  header["config"] = ConfigJson(*options);
  header["summary"] = SummaryJson(s, *result);
  header["server"] = ServerUsageJson(*result, options->hold);
  report.SetHeader(header);
  if (absl::Status st = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !st.ok()) return st;
  return lifecycle::RunOutcome(*result, s);
}

}  // namespace backendlab::tools
