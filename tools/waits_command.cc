// `backendlab waits`: flags -> waits::RunWaitsExperiment -> the table, its
// ratios to long-lived, the 2018 WaitLatchOrSocket thread's figures beside it,
// and the JSON/CSV files.
#include "tools/waits_command.h"

#include <iostream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"
#include "tools/waits_report.h"
#include "waits/waits_experiment.h"

namespace backendlab::tools {
namespace {

using waits::WaitsRow;

constexpr FlagSpec kWaitsFlags[] = {
    {"strategies", "per-call,long-lived,cached,poll", "wait strategies to compare"},
    {"pairs", "1,2,4,8", "client/backend pairs running at once (each value 1..64)"},
    {"transport", "unix", "unix (Unix-domain stream sockets) or tcp (loopback, 127.0.0.1)"},
    {"shape", "direct", "direct (the backend waits for its client) or fdw (it forwards to a remote server and waits for that)"},
    {"rounds", "5", "interleaved rounds; medians are reported"},
    {"duration", "300ms", "measured time of each run (after a 50 ms warm-up)"},
    {"syscalls", "on", "after the rounds, count the backends' system calls by kind (needs tracefs; said once if refused)"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};

absl::StatusOr<waits::WaitsExperimentOptions> ParseWaitsOptions(const Flags& flags) {
  waits::WaitsExperimentOptions o;
  absl::StatusOr<std::vector<std::string>> strategies = flags.GetList("strategies");
  if (!strategies.ok()) return strategies.status();
  o.strategies.clear();
  for (const std::string& name : *strategies) {
    absl::StatusOr<waits::WaitStrategy> s = waits::ParseWaitStrategy(name);
    if (!s.ok()) return s.status();
    o.strategies.push_back(*s);
  }
  absl::StatusOr<std::vector<std::string>> pairs = flags.GetList("pairs");
  if (!pairs.ok()) return pairs.status();
  o.pairs.clear();
  for (const std::string& p : *pairs) {
    int n;
    if (!absl::SimpleAtoi(p, &n)) return absl::InvalidArgumentError(absl::StrCat("--pairs: ", Quoted(p), " is not a number"));
    o.pairs.push_back(n);
  }
  absl::StatusOr<waits::Transport> transport = waits::ParseTransport(flags.Get("transport"));
  if (!transport.ok()) return transport.status();
  o.transport = *transport;
  absl::StatusOr<waits::Shape> shape = waits::ParseShape(flags.Get("shape"));
  if (!shape.ok()) return shape.status();
  o.shape = *shape;
  absl::StatusOr<RunFlags> run = ParseRunFlags(flags);
  if (!run.ok()) return run.status();
  o.rounds = run->rounds;
  o.duration = run->duration;
  o.count_syscalls = run->count_syscalls;
  if (absl::Status s = waits::ValidateWaitsOptions(o); !s.ok()) return s;
  return o;
}

Report RowsTable(const std::vector<WaitsRow>& rows) {
  Report report({
      {"strategy", "strategy"},
      {"pairs", "pairs"},
      {"round_trips_per_second", "rt/s", 0},
      {"vs_long_lived", "vs long-lived", 2, ColumnKind::kRatio},
      {"round_trips_per_second_min", "min", 0},
      {"round_trips_per_second_max", "max", 0},
      {"round_trip_us_p50", "rt us p50", 1},
      {"round_trip_us_p99", "p99", 1},
      {"user_us", "user us/rt", 2},
      {"sys_us", "sys us/rt", 2},
      {"waits", "waits/rt", 2},
      {"syscalls", "syscalls/rt", 2},
      {"syscall_kinds", "by kind"},
      {"close_us", "close us/rt", 2},
      {"close_share", "close/sys", 2},
  });
  for (const WaitsRow& r : rows) {
    Report::Row row = report.NewRow();
    row
        .Set("strategy", std::string(waits::WaitStrategyName(r.strategy)))
        .Set("pairs", static_cast<int64_t>(r.pairs))
        .Set("round_trips_per_second", r.round_trips_per_second.median)
        .Set("vs_long_lived", RatioCell(r.vs_long_lived))
        .Set("round_trips_per_second_min", r.round_trips_per_second.min)
        .Set("round_trips_per_second_max", r.round_trips_per_second.max)
        .Set("round_trip_us_p50", r.round_trip_us.median)
        .Set("round_trip_us_p99", r.round_trip_us.p99)
        .Set("user_us", r.user_us)
        .Set("sys_us", r.sys_us)
        .Set("waits", r.waits)
        .Set("syscalls", SyscallTotalCell(r.syscalls))
        .Set("syscall_kinds", SyscallKindsCell(r.syscalls))
        .Set("close_us", r.close_us)
        .Set("close_share", r.close_share);
    report.AddRow(std::move(row));
  }
  return report;
}

nlohmann::json SyscallsByRow(const std::vector<WaitsRow>& rows) {
  nlohmann::json j = nlohmann::json::object();
  for (const WaitsRow& r : rows) {
    j[absl::StrCat(std::string(waits::WaitStrategyName(r.strategy)), "/", r.pairs)] = SyscallsJson(r.syscalls);
  }
  return j;
}

}  // namespace

std::string WaitsUsage() {
  return absl::StrCat(
      "usage: backendlab waits [flags]\n"
      "Client/backend process pairs doing request/response round trips, each backend\n"
      "waiting for its socket with one wait strategy: per-call (a set made and freed per\n"
      "wait, as WaitLatchOrSocket), long-lived (FeBeWaitSet), cached (the patch of the\n"
      "2018 WaitLatchOrSocket thread), poll. Round trips per second, latency, the\n"
      "backends' CPU and system calls per round trip, close()'s share, per strategy x\n"
      "pairs, with ratios to long-lived.\n\n",
      FlagsHelp(kWaitsFlags));
}

absl::Status RunWaitsCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kWaitsFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<waits::WaitsExperimentOptions> options = ParseWaitsOptions(*flags);
  if (!options.ok()) return options.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  absl::StatusOr<waits::WaitsExperimentResult> result = waits::RunWaitsExperiment(*options);
  if (!result.ok()) return result.status();

  nlohmann::json header =
      RunHeader("waits", {options->rounds, options->duration, options->count_syscalls}, result->syscalls_status);
  header["transport"] = waits::TransportName(options->transport);
  header["shape"] = waits::ShapeName(options->shape);
  header["latch"] = "signalfd-epoll";
  header["request_bytes"] = waits::kRequestBytes;
  header["response_bytes"] = waits::kResponseBytes;
  header["counted_round_trips_per_pair"] = options->counted_round_trips;
  header["syscalls"] = SyscallsByRow(result->rows);

  out << absl::StrFormat("backendlab waits: request/response pairs, %s sockets, %s shape, %d interleaved rounds of %d ms, medians\n",
                         waits::TransportName(options->transport), waits::ShapeName(options->shape), options->rounds,
                         absl::ToInt64Milliseconds(options->duration));
  out << MachineLine(header) << "\n\n";
  Report report = RowsTable(result->rows);
  report.PrintText(out);
  out << "\nrt/s: all pairs together; CPU, waits and system calls: the backends' own, per round trip\n"
         "  (system calls from a separate counted pass); close: wall time in close() of wait sets.\n"
      << "vs long-lived: rt/s over long-lived's at the same pairs, " << kRatioLegend << ".\n"
         "Every backend's set holds its latch (signalfd-epoll), the postmaster-death pipe and its socket.\n"
         "  close/sys is that wall time over the backends' system CPU, not a share of samples.\n"
         "The 2018 WaitLatchOrSocket thread (72 cores, pgbench -S through postgres_fdw): per-call 38k TPS,\n"
         "  cached 225k, poll 140k; __close in 62.6 % of its perf samples (a share of the whole profile, which\n"
         "  close/sys is not). The 2018 kqueue thread: no kqueue on Linux.\n";
  PrintSyscallsStatus(out, options->count_syscalls, result->syscalls_status);
  report.SetHeader(header);
  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
