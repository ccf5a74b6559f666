// `backendlab latch`: flags -> waits::RunLatchExperiment -> the table, the
// 2010 latch thread's figures beside it, and the JSON/CSV files.
#include "tools/latch_command.h"

#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"
#include "tools/waits_report.h"
#include "waits/latch_experiment.h"

namespace backendlab::tools {
namespace {

using waits::LatchRow;

constexpr FlagSpec kLatchFlags[] = {
    {"latches", "selfpipe-select,selfpipe-poll,signalfd-epoll,semaphore,eventfd-epoll,futex",
     "latch implementations to compare; the first is the baseline of the ratios"},
    {"rounds", "5", "interleaved rounds; medians are reported"},
    {"duration", "300ms", "measured time of each ping-pong run (after a 50 ms warm-up)"},
    {"cpus", "any", "where the two processes run: any, one CPU for both (0), or one each (0,1)"},
    {"syscalls", "on", "after the rounds, count every system call by kind (needs tracefs; said once if refused)"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};

absl::StatusOr<waits::LatchExperimentOptions> ParseLatchOptions(const Flags& flags) {
  waits::LatchExperimentOptions o;
  absl::StatusOr<std::vector<std::string>> latches = flags.GetList("latches");
  if (!latches.ok()) return latches.status();
  o.latches.clear();
  for (const std::string& name : *latches) {
    absl::StatusOr<waits::LatchKind> k = waits::ParseLatch(name);
    if (!k.ok()) return k.status();
    o.latches.push_back(*k);
  }
  absl::StatusOr<RunFlags> run = ParseRunFlags(flags);
  if (!run.ok()) return run.status();
  o.rounds = run->rounds;
  o.duration = run->duration;
  o.count_syscalls = run->count_syscalls;
  absl::StatusOr<std::vector<int>> cpus = waits::ParseCpus(flags.Get("cpus"));
  if (!cpus.ok()) return cpus.status();
  o.cpus = *cpus;
  if (absl::Status s = waits::ValidateLatchOptions(o); !s.ok()) return s;
  return o;
}

Report RowsTable(const std::vector<LatchRow>& rows) {
  Report report({
      {"latch", "latch"},
      {"round_trips_per_second", "rt/s", 0},
      {"round_trips_per_second_vs_baseline", "vs first", 2, ColumnKind::kRatio},
      {"round_trips_per_second_min", "min", 0},
      {"round_trips_per_second_max", "max", 0},
      {"round_trip_us_p50", "rt us p50", 1},
      {"round_trip_us_p99", "p99", 1},
      {"user_us", "user us/rt", 2},
      {"sys_us", "sys us/rt", 2},
      {"syscalls", "syscalls/rt", 2},
      {"syscall_kinds", "by kind"},
      {"busy_set_ns", "busy SetLatch ns", 0},
      {"busy_set_syscalls", "setter calls", 2},
      {"busy_owner_syscalls", "owner calls", 2},
  });
  for (const LatchRow& r : rows) {
    Report::Row row = report.NewRow();
    row
        .Set("latch", std::string(waits::LatchName(r.latch)))
        .Set("round_trips_per_second", r.round_trips_per_second.median)
        .Set("round_trips_per_second_vs_baseline", RatioCell(r.vs_baseline))
        .Set("round_trips_per_second_min", r.round_trips_per_second.min)
        .Set("round_trips_per_second_max", r.round_trips_per_second.max)
        .Set("round_trip_us_p50", r.round_trip_us.median)
        .Set("round_trip_us_p99", r.round_trip_us.p99)
        .Set("user_us", r.user_us)
        .Set("sys_us", r.sys_us)
        .Set("syscalls", SyscallTotalCell(r.syscalls))
        .Set("syscall_kinds", SyscallKindsCell(r.syscalls))
        .Set("busy_set_ns", r.busy_set_ns ? Cell(*r.busy_set_ns) : Cell(std::monostate{}))
        .Set("busy_set_syscalls", SyscallTotalCell(r.busy_set_syscalls))
        .Set("busy_owner_syscalls", SyscallTotalCell(r.busy_owner_syscalls));
    report.AddRow(std::move(row));
  }
  return report;
}

// Each row's system calls by kind, whole, for the JSON header.
nlohmann::json SyscallsByLatch(const std::vector<LatchRow>& rows) {
  nlohmann::json j = nlohmann::json::object();
  for (const LatchRow& r : rows) {
    j[std::string(waits::LatchName(r.latch))] = {{"round_trip", SyscallsJson(r.syscalls)},
                                                 {"busy_set", SyscallsJson(r.busy_set_syscalls)},
                                                 {"busy_owner", SyscallsJson(r.busy_owner_syscalls)}};
  }
  return j;
}

}  // namespace

std::string LatchUsage() {
  return absl::StrCat(
      "usage: backendlab latch [flags]\n"
      "Two processes wake each other in turn through a pair of latches (a ping-pong),\n"
      "for each implementation: round trips per second, latency, CPU and system calls\n"
      "per round trip; and what a SetLatch costs when its owner is busy, not asleep.\n"
      "Implementations: selfpipe-select, selfpipe-poll (2010), signalfd-epoll (PostgreSQL >= 14),\n"
      "semaphore, eventfd-epoll, futex.\n\n",
      FlagsHelp(kLatchFlags));
}

absl::Status RunLatchCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kLatchFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<waits::LatchExperimentOptions> options = ParseLatchOptions(*flags);
  if (!options.ok()) return options.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  absl::StatusOr<waits::LatchExperimentResult> result = waits::RunLatchExperiment(*options);
  if (!result.ok()) return result.status();

  nlohmann::json header =
      RunHeader("latch", {options->rounds, options->duration, options->count_syscalls}, result->syscalls_status);
  header["cpus"] = options->cpus.empty() ? nlohmann::json("any") : nlohmann::json(options->cpus);
  header["counted_round_trips"] = options->counted_round_trips;
  header["busy_sets"] = options->busy_sets;
  header["syscalls"] = SyscallsByLatch(result->rows);
  header["baseline"] = std::string(waits::LatchName(options->latches.front()));

  out << absl::StrFormat("backendlab latch: a ping-pong between two processes, %d interleaved rounds of %d ms, medians\n",
                         options->rounds, absl::ToInt64Milliseconds(options->duration));
  out << MachineLine(header) << "; processes on "
      << (options->cpus.empty() ? std::string("any CPU")
                                : options->cpus.size() == 1 ? absl::StrCat("CPU ", options->cpus[0], " both")
                                                            : absl::StrCat("CPUs ", absl::StrJoin(options->cpus, " and ")))
      << "\n\n";
  Report report = RowsTable(result->rows);
  report.PrintText(out);
  out << "\nrt: one round trip, each process setting the other's latch and waiting on its own;\n"
         "  CPU and system calls are both processes' (system calls from a separate counted pass).\n"
         "vs first: rt/s over the first latch's (" << waits::LatchName(options->latches.front()) << "), "
      << kRatioLegend << ".\n"
      << "busy SetLatch: a SetLatch on an owner that is running, not waiting (setter's wall time;\n"
         "  setter calls / owner calls: the system calls it costs each side, per SetLatch;\n"
         "  not measured with both processes on one CPU, where a busy owner holds the CPU).\n"
         "The 2010 latch thread (Linux 2.6.18, Nehalem): 15 us per ping-pong for the self-pipe + select()\n"
         "  latch, 10.5 us with poll(), 9 us for a pipe + poll() hack, 6 us for semaphores.\n";
  PrintSyscallsStatus(out, options->count_syscalls, result->syscalls_status);
  report.SetHeader(header);
  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
