// `backendlab xlog`: flags -> xlog::RunXlogExperiment -> the measured table,
// the contention model's table (labelled a model), and the JSON/CSV files.
#include "tools/xlog_command.h"

#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"
#include "tools/xlog_report.h"
#include "xlog/wal.h"
#include "xlog/xlog_experiment.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kXlogFlags[] = {
    {"variants", "per-lock,central-spinlock,central-atomic,per-lock-atomic", "ways to track the last important LSN"},
    {"workers", "1,2", "inserting threads (1..256)"},
    {"record-sizes", "32,200,8192", "record sizes in bytes (multiples of 8, 8..1048576)"},
    {"readers", "off,bgwriter,100hz,max", "GetLastImportantRecPtr rates: off, bgwriter (once per 15 s), 100hz, max"},
    {"locks", "8", "insert locks (NUM_XLOGINSERT_LOCKS; 1..1024)"},
    {"unimportant-percent", "10", "share of records flagged unimportant (0..100)"},
    {"model-workers", "8,32,96", "worker counts the contention model predicts (2..100000)"},
    {"rounds", "7", "interleaved rounds; medians are reported"},
    {"window-ms", "60", "length of one measurement window (1..60000)"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};

template <typename T, typename Parse>
absl::Status ParseNames(const Flags& flags, std::string_view name, Parse parse, std::vector<T>& out) {
  absl::StatusOr<std::vector<std::string>> items = flags.GetList(name);
  if (!items.ok()) return items.status();
  for (const std::string& item : *items) {
    absl::StatusOr<T> v = parse(item);
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("flag ", Quoted("--" + std::string(name)), ": ", v.status().message()));
    out.push_back(*v);
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status ParseInts(const Flags& flags, std::string_view name, int64_t min, int64_t max, std::vector<T>& out) {
  absl::StatusOr<std::vector<int64_t>> values = flags.GetIntList(name, min, max);
  if (!values.ok()) return values.status();
  for (int64_t v : *values) out.push_back(static_cast<T>(v));
  return absl::OkStatus();
}

absl::StatusOr<xlog::XlogExperimentOptions> ParseXlogOptions(const Flags& flags) {
  xlog::XlogExperimentOptions o;
  for (absl::Status s : {ParseNames(flags, "variants", xlog::ParseTracker, o.variants),
                         ParseInts(flags, "workers", 1, xlog::kMaxWorkers, o.workers),
                         ParseInts(flags, "record-sizes", xlog::kRecordAlign, xlog::kMaxRecordSize, o.record_sizes),
                         ParseNames(flags, "readers", xlog::ParseReaderRate, o.readers),
                         ParseInts(flags, "locks", 1, xlog::kMaxLocks, o.locks),
                         ParseInts(flags, "model-workers", 2, 100000, o.model_workers)}) {
    if (!s.ok()) return s;
  }
  for (uint32_t size : o.record_sizes) {
    if (size % xlog::kRecordAlign != 0) {
      return absl::InvalidArgumentError(absl::StrCat("flag '--record-sizes': ", size, " is not a multiple of 8"));
    }
  }
  absl::StatusOr<int64_t> unimportant = flags.GetInt("unimportant-percent", 0, 100);
  if (!unimportant.ok()) return unimportant.status();
  o.unimportant_percent = static_cast<int>(*unimportant);
  absl::StatusOr<int64_t> rounds = flags.GetInt("rounds", 1, 1000);
  if (!rounds.ok()) return rounds.status();
  o.rounds = *rounds;
  absl::StatusOr<int64_t> window = flags.GetInt("window-ms", 1, 60000);
  if (!window.ok()) return window.status();
  o.window = absl::Milliseconds(*window);
  return o;
}

}  // namespace

std::string XlogUsage() {
  return absl::StrCat(
      "usage: backendlab xlog [flags]\n"
      "WAL insert locks and the last important record LSN: records/s, insert latency and the\n"
      "reader's cost for per-lock (PostgreSQL), central-spinlock, central-atomic and per-lock-atomic,\n"
      "interleaved, with ratios to per-lock, and a contention model past two cores (labelled a model).\n\n",
      FlagsHelp(kXlogFlags));
}

absl::Status RunXlogCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kXlogFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<xlog::XlogExperimentOptions> options = ParseXlogOptions(*flags);
  if (!options.ok()) return options.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  absl::StatusOr<xlog::XlogExperimentResult> result = xlog::RunXlogExperiment(*options);
  if (!result.ok()) return result.status();

  Report report = XlogRowsTable(result->rows);
  nlohmann::json header = MachineHeader();
  header["command"] = "xlog";
  header["rounds"] = options->rounds;
  header["window_ms"] = absl::ToInt64Milliseconds(options->window);
  header["unimportant_percent"] = options->unimportant_percent;
  header["ring_bytes"] = xlog::kRingBytes;
  header["workers_are"] = "threads";
  header["workers_pinned"] = "worker i on CPU i mod the CPUs allowed";
  header["cpus_allowed"] = xlog::AllowedCpuCount();
  header["insert_samples"] = "one insert in 16 timed, net of the clock's own cost";
  header["clock_ns"] = result->clock_ns;

  out << absl::StrFormat(
      "backendlab xlog: WAL insert path, %d configurations, %d interleaved rounds of %d ms windows, medians\n",
      result->rows.size(), options->rounds, absl::ToInt64Milliseconds(options->window));
  out << MachineLine(header) << "; workers are threads, worker i on CPU i mod " << xlog::AllowedCpuCount()
      << "; " << options->unimportant_percent
      << "% of records unimportant; 16 MiB ring\n\n";
  report.PrintText(out);
  PrintXlogNotes(*result, out);
  if (result->coherence_ns) header["coherence_latency_ns"] = result->coherence_ns->median;
  header["model"] = PrintXlogModel(*result, *options, out);
  report.SetHeader(header);
  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
