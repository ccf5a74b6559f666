// `xlog`'s measured table, its notes and the contention model's table.
#include "tools/xlog_report.h"

#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "xlog/wal.h"

namespace backendlab::tools {
namespace {

using xlog::Tracker;
using xlog::XlogRow;

bool IsCentralVariant(Tracker v) { return v == Tracker::kCentralSpinlock || v == Tracker::kCentralAtomic; }

Cell Text(std::string_view s) { return Cell(std::in_place_type<std::string>, std::string(s)); }

}  // namespace

Report XlogRowsTable(const std::vector<XlogRow>& rows) {
  Report report({
      {"variant", "variant"},
      {"workers", "N"},
      {"record_size", "record"},
      {"reader", "reader"},
      {"locks", "locks"},
      {"records_per_second", "records/s", 0},
      {"records_per_second_p10", ""},
      {"records_per_second_p90", ""},
      {"spread_percent", "spread %", 1, ColumnKind::kValue, /*text_only=*/true},
      {"insert_ns_p50", "p50 ns", 0},
      {"insert_ns_p99", "p99 ns", 0},
      {"reader_ns_per_call", "reader ns", 0},
      {"reader_calls_per_second", "calls/s", 1},
      {"contended_share", "waits %", 2},
      {"records_per_second_vs_per_lock", "rec/s vs per-lock", 2, ColumnKind::kRatio},
      {"insert_ns_p99_vs_per_lock", "p99 vs", 2, ColumnKind::kRatio},
      {"reader_ns_vs_per_lock", "reader vs", 2, ColumnKind::kRatio},
      {"records_per_second_vs_reader_off", "vs reader off", 2, ColumnKind::kRatio},
  });
  for (const XlogRow& r : rows) {
    Report::Row row = report.NewRow();
    row
        .Set("variant", Text(xlog::TrackerName(r.config.variant)))
        .Set("workers", int64_t{r.config.workers})
        .Set("record_size", int64_t{r.config.record_size})
        .Set("reader", Text(xlog::ReaderRateName(r.config.reader)))
        .Set("locks", int64_t{r.config.locks})
        .Set("records_per_second", r.records_per_second.median)
        .Set("records_per_second_p10", r.records_per_second.p10)
        .Set("records_per_second_p90", r.records_per_second.p90)
        .Set("spread_percent", r.records_per_second.median > 0 ? Cell(100 * (r.records_per_second.p90 - r.records_per_second.p10) / r.records_per_second.median) : Cell(std::monostate{}))
        .Set("insert_ns_p50", r.insert_p50_ns)
        .Set("insert_ns_p99", r.insert_p99_ns)
        .Set("reader_ns_per_call", OptionalCell(r.reader_ns))
        .Set("reader_calls_per_second", r.reader_calls_per_second)
        .Set("contended_share", 100 * r.contended_share)
        .Set("records_per_second_vs_per_lock", RatioCell(r.records_vs_per_lock))
        .Set("insert_ns_p99_vs_per_lock", RatioCell(r.p99_vs_per_lock))
        .Set("reader_ns_vs_per_lock", RatioCell(r.reader_vs_per_lock))
        .Set("records_per_second_vs_reader_off", RatioCell(r.records_vs_reader_off));
    report.AddRow(std::move(row));
  }
  return report;
}

namespace {

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
    Report::Row row = report.NewRow();
    row.Set("variant", Text(xlog::TrackerName(in.variant)))
        .Set("locks", int64_t{in.locks})
        .Set("record_size", int64_t{m.record_size})
        .Set("measured_records_per_second_1", in.records_per_second_1)
        .Set("measured_records_per_second_2", in.records_per_second_2)
        .Set("reservation_transfers", m.calibration.reservation_transfers)
        .Set("line_transfers",
             IsCentralVariant(in.variant) ? Cell(m.calibration.line_transfers) : Cell(std::monostate{}))
        .Set("clamped", Text(m.calibration.clamped ? "yes" : "no"));
    for (const xlog::ModelPoint& p : m.points) {
      row.Set(absl::StrCat("model_records_per_second_", p.workers), p.records_per_second)
          .Set(absl::StrCat("model_vs_per_lock_", p.workers), OptionalCell(p.vs_per_lock))
          .Set(absl::StrCat("transfers_per_insert_", p.workers), xlog::FittedTransfersPerInsert(m.calibration, p.workers))
          .Set(absl::StrCat("structural_transfers_per_insert_", p.workers), xlog::StructuralTransfersPerInsert(in, p.workers));
    }
    report.AddRow(std::move(row));
  }
  return report;
}

constexpr std::string_view kModelLabel =
    "MODEL, not a measurement: mean-value analysis of a closed queueing network (xlog/README.md, "
    "'The contention model')";

}  // namespace

void PrintXlogNotes(const xlog::XlogExperimentResult& result, std::ostream& out) {
  out << "\nrecords/s: all workers together; spread: p90 - p10 of the rounds over the median.\n"
      << absl::StrFormat("p50/p99 ns: one insert in 16 timed on its own; this and reader ns are net of the clock's own\n"
                         "  %.0f ns (the least of back-to-back readings, taken in every window).\n",
                         result.clock_ns)
      << "reader ns: GetLastImportantRecPtr per call while the workers insert (median; '-' when no call fell in a\n"
         "  window: at bgwriter's once per 15 s, most windows have none); waits: insert-lock acquires that waited.\n"
         "vs per-lock: over the same configuration's per-lock figure; vs reader off: over the same variant's;\n"
      << "  " << kRatioLegend << ".\n";
}

nlohmann::json PrintXlogModel(const xlog::XlogExperimentResult& result, const xlog::XlogExperimentOptions& options,
                              std::ostream& out) {
  nlohmann::json model = nlohmann::json::object();
  model["label"] = std::string(kModelLabel);
  if (result.coherence_ns) {
    model["coherence_latency_ns"] = result.coherence_ns->median;
    model["coherence_latency_ns_p10"] = result.coherence_ns->p10;
    model["coherence_latency_ns_p90"] = result.coherence_ns->p90;
  }
  model["calibration"] = "each variant's measured records/s at 1 and 2 workers, reader off (medians)";
  const double important = 1 - options.unimportant_percent / 100.0;
  model["important_share"] = important;
  out << "\nContention model: " << kModelLabel << ".\n";
  if (result.model.empty()) {
    out << "  no model: " << result.model_missing << "\n";
    model["missing"] = result.model_missing;
    return model;
  }
  out << absl::StrFormat(
      "  inputs: coherence latency %.1f ns per cache-line transfer (measured here: two pinned threads, p10 %.1f,\n"
      "  p90 %.1f over the rounds); calibration: each variant's measured 1- and 2-worker records/s, reader off\n"
      "  (medians; the columns below); important share %.2f. Fitted: transfers per visit to the reservation (per-lock,\n"
      "  per-lock-atomic; the central variants take per-lock's) and to a central variant's own line.\n"
      "  \"as coded\": one transfer per central line the code visits. The reader is not modelled; NUMA\n"
      "  and retry storms that grow with N are not either: read the N=32 and N=96 columns as \"if this\n"
      "  machine's per-visit cost held\".\n\n",
      result.coherence_ns->median, result.coherence_ns->p10, result.coherence_ns->p90, important);
  Report model_report = ModelTable(result, options.model_workers);
  model_report.PrintText(out);
  model["rows"] = model_report.ToJson()["rows"];
  return model;
}

}  // namespace backendlab::tools
