// `backendlab xlog`: flags -> xlog::RunXlogExperiment -> the measured table,
// the contention model's table (labelled a model), and the JSON/CSV files.
#include "tools/xlog_command.h"

#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"
#include "xlog/wal.h"
#include "xlog/xlog_experiment.h"

namespace backendlab::tools {
namespace {

using xlog::ReaderRate;
using xlog::Tracker;
using xlog::XlogRow;

constexpr FlagSpec kFlags[] = {
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

absl::StatusOr<xlog::XlogExperimentOptions> ParseOptions(const Flags& flags) {
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
  o.duration_ms = *window;
  return o;
}

bool IsCentralVariant(Tracker v) { return v == Tracker::kCentralSpinlock || v == Tracker::kCentralAtomic; }

Cell Optional(const std::optional<double>& v) { return v ? Cell(*v) : Cell(std::monostate{}); }
Cell Text(std::string_view s) { return Cell(std::in_place_type<std::string>, std::string(s)); }

Report RowsTable(const std::vector<XlogRow>& rows) {
  Report report({
      {"variant", "variant"},
      {"workers", "N"},
      {"record_size", "record"},
      {"reader", "reader"},
      {"locks", "locks"},
      {"records_per_second", "records/s", 0},
      {"records_per_second_p10", ""},
      {"records_per_second_p90", ""},
      {"", "spread %", 1},
      {"insert_p50_ns", "p50 ns", 0},
      {"insert_p99_ns", "p99 ns", 0},
      {"reader_ns_per_call", "reader ns", 0},
      {"reader_calls_per_second", "calls/s", 1},
      {"contended_share", "waits %", 2},
      {"records_per_second_vs_per_lock", "rec/s vs per-lock", 2, ColumnKind::kRatio},
      {"insert_p99_vs_per_lock", "p99 vs", 2, ColumnKind::kRatio},
      {"reader_ns_vs_per_lock", "reader vs", 2, ColumnKind::kRatio},
      {"records_per_second_vs_reader_off", "vs reader off", 2, ColumnKind::kRatio},
  });
  for (const XlogRow& r : rows) {
    std::vector<Cell> row;
    row.push_back(Text(xlog::TrackerName(r.config.variant)));
    row.push_back(int64_t{r.config.workers});
    row.push_back(int64_t{r.config.record_size});
    row.push_back(Text(xlog::ReaderRateName(r.config.reader)));
    row.push_back(int64_t{r.config.locks});
    row.push_back(r.records_per_second.median);
    row.push_back(r.records_per_second.p10);
    row.push_back(r.records_per_second.p90);
    row.push_back(r.records_per_second.median > 0
                      ? Cell(100 * (r.records_per_second.p90 - r.records_per_second.p10) / r.records_per_second.median)
                      : Cell(std::monostate{}));
    row.push_back(r.insert_p50_ns);
    row.push_back(r.insert_p99_ns);
    row.push_back(Optional(r.reader_ns));
    row.push_back(r.reader_calls_per_second);
    row.push_back(100 * r.contended_share);
    row.push_back(RatioCell(r.records_vs_per_lock));
    row.push_back(RatioCell(r.p99_vs_per_lock));
    row.push_back(RatioCell(r.reader_vs_per_lock));
    row.push_back(RatioCell(r.records_vs_reader_off));
    report.AddRow(std::move(row));
  }
  return report;
}

Report ModelTable(const xlog::XlogExperimentResult& result, const std::vector<int>& model_workers) {
  std::vector<Column> columns = {
      {"variant", "variant"},
      {"locks", "locks"},
      {"record_size", "record"},
      {"measured_records_per_second_1", "measured N=1", 0},
      {"measured_records_per_second_2", "N=2", 0},
      {"reservation_transfers", "transfers/visit: reservation", 2},
      {"line_transfers", "own line", 2},
      {"clamped", "clamped"},
  };
  for (int n : model_workers) {
    columns.push_back({absl::StrCat("model_records_per_second_", n), absl::StrCat("MODEL N=", n), 0});
    columns.push_back({absl::StrCat("model_vs_per_lock_", n), "vs per-lock", 3});
    columns.push_back({absl::StrCat("transfers_per_insert_", n), "transfers/insert", 2});
    columns.push_back({absl::StrCat("structural_transfers_per_insert_", n), "as coded", 1});
  }
  Report report(std::move(columns));
  for (const xlog::ModelRow& m : result.model) {
    const xlog::ModelInputs& in = m.calibration.inputs;
    std::vector<Cell> row;
    row.push_back(Text(xlog::TrackerName(in.variant)));
    row.push_back(int64_t{in.locks});
    row.push_back(int64_t{m.record_size});
    row.push_back(in.records_per_second_1);
    row.push_back(in.records_per_second_2);
    row.push_back(m.calibration.reservation_transfers);
    row.push_back(IsCentralVariant(in.variant) ? Cell(m.calibration.line_transfers) : Cell(std::monostate{}));
    row.push_back(Text(m.calibration.clamped ? "yes" : "no"));
    for (const xlog::ModelPoint& p : m.points) {
      row.push_back(p.records_per_second);
      row.push_back(Optional(p.vs_per_lock));
      row.push_back(xlog::FittedTransfersPerInsert(m.calibration, p.workers));
      row.push_back(xlog::StructuralTransfersPerInsert(in, p.workers));
    }
    report.AddRow(std::move(row));
  }
  return report;
}

constexpr std::string_view kModelLabel =
    "MODEL, not a measurement: mean-value analysis of a closed queueing network (xlog/README.md, "
    "'The contention model')";

}  // namespace

std::string XlogUsage() {
  return absl::StrCat(
      "usage: backendlab xlog [flags]\n"
      "WAL insert locks and the last important record LSN: records/s, insert latency and the\n"
      "reader's cost for per-lock (PostgreSQL), central-spinlock, central-atomic and per-lock-atomic,\n"
      "interleaved, with ratios to per-lock, and a contention model past two cores (labelled a model).\n\n",
      FlagsHelp(kFlags));
}

absl::Status RunXlogCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<xlog::XlogExperimentOptions> options = ParseOptions(*flags);
  if (!options.ok()) return options.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  absl::StatusOr<xlog::XlogExperimentResult> result = xlog::RunXlogExperiment(*options);
  if (!result.ok()) return result.status();

  Report report = RowsTable(result->rows);
  nlohmann::json header = MachineHeader();
  header["command"] = "xlog";
  header["rounds"] = options->rounds;
  header["window_ms"] = options->duration_ms;
  header["unimportant_percent"] = options->unimportant_percent;
  header["ring_bytes"] = xlog::kRingBytes;
  header["workers_are"] = "threads";
  header["workers_pinned"] = "worker i on CPU i mod the CPUs allowed";
  header["cpus_allowed"] = xlog::AllowedCpuCount();
  header["insert_samples"] = "one insert in 16 timed, net of the clock's own cost";
  header["clock_ns"] = result->clock_ns;

  out << absl::StrFormat(
      "backendlab xlog: WAL insert path, %d configurations, %d interleaved rounds of %d ms windows, medians\n",
      result->rows.size(), options->rounds, options->duration_ms);
  out << MachineLine(header) << "; workers are threads, worker i on CPU i mod " << xlog::AllowedCpuCount()
      << "; " << options->unimportant_percent
      << "% of records unimportant; 16 MiB ring\n\n";
  report.PrintText(out);
  out << "\nrecords/s: all workers together; spread: p90 - p10 of the rounds over the median.\n"
      << absl::StrFormat("p50/p99 ns: one insert in 16 timed on its own; this and reader ns are net of the clock's own\n"
                         "  %.0f ns (the least of back-to-back readings, taken in every window).\n",
                         result->clock_ns)
      << 
         "reader ns: GetLastImportantRecPtr per call while the workers insert (median; '-' when no call fell in a\n"
         "  window: at bgwriter's once per 15 s, most windows have none); waits: insert-lock acquires that waited.\n"
         "vs per-lock: over the same configuration's per-lock figure; vs reader off: over the same variant's;\n"
      << "  " << kRatioLegend << ".\n";

  nlohmann::json model = nlohmann::json::object();
  model["label"] = std::string(kModelLabel);
  if (result->coherence_ns) {
    header["coherence_latency_ns"] = result->coherence_ns->median;
    model["coherence_latency_ns"] = result->coherence_ns->median;
    model["coherence_latency_ns_p10"] = result->coherence_ns->p10;
    model["coherence_latency_ns_p90"] = result->coherence_ns->p90;
  }
  model["calibration"] = "each variant's measured records/s at 1 and 2 workers, reader off (medians)";
  model["important_share"] = 1 - options->unimportant_percent / 100.0;
  out << "\nContention model: " << kModelLabel << ".\n";
  if (result->model.empty()) {
    out << "  no model: " << result->model_missing << "\n";
    model["missing"] = result->model_missing;
  } else {
    out << absl::StrFormat(
        "  inputs: coherence latency %.1f ns per cache-line transfer (measured here: two pinned threads, p10 %.1f,\n"
        "  p90 %.1f over the rounds); calibration: each variant's measured 1- and 2-worker records/s, reader off\n"
        "  (medians; the columns below); important share %.2f. Fitted: transfers per visit to the reservation (per-lock,\n"
        "  per-lock-atomic; the central variants take per-lock's) and to a central variant's own line.\n"
        "  \"as coded\": one transfer per central line the code visits. The reader is not modelled; NUMA\n"
        "  and retry storms that grow with N are not either: read the N=32 and N=96 columns as \"if this\n"
        "  machine's per-visit cost held\".\n\n",
        result->coherence_ns->median, result->coherence_ns->p10, result->coherence_ns->p90,
        1 - options->unimportant_percent / 100.0);
    Report model_report = ModelTable(*result, options->model_workers);
    model_report.PrintText(out);
    model["rows"] = model_report.ToJson()["rows"];
  }
  header["model"] = model;
  report.SetHeader(header);
  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
