// A table of results printed three ways: aligned text for people, CSV and JSON
// for machines. Keys are the same words in all three.
#ifndef BACKENDLAB_TOOLS_REPORT_H_
#define BACKENDLAB_TOOLS_REPORT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "base/statistics.h"
#include "base/summary.h"
#include "tools/flags.h"

namespace backendlab::tools {

// A figure with its 95 % interval, and for a ratio its verdict, computed
// by base/statistics.h before the report is made: the report only formats.
struct Estimate {
  double value = 0;
  std::optional<Interval> interval;  // none: too few rounds for one
  std::optional<Verdict> verdict;    // ratios
  bool precise = true;               // false: the interval did not reach the precision asked for
  // Computed from values read off a histogram's buckets (base/histogram.h:
  // each within Histogram::kMaxRelativeError), whose rounds can agree to the
  // bucket: an interval narrower than a bucket claims more than they resolve.
  bool bucketed = false;
};

// A yes/no fact: true/false in JSON and CSV, yes/no in text. (A bool of
// its own type, so that a string literal never turns into one.)
struct Boolean {
  bool value = false;
};

// A missing value (a layout that has no scan) is std::monostate: "-" in text,
// empty in CSV, null in JSON.
// A figure per round, for machines to re-analyse: a JSON array; in CSV
// separated by ';'; not for text columns.
using Values = std::vector<double>;

using Cell = std::variant<std::monostate, int64_t, double, std::string, Estimate, Boolean, Values>;

// The statistics layer's estimates as cells. A ratio held to a `precision`
// (> 0, relative half-width) is marked imprecise where its interval is wider
// or missing; precision 0 asks for none. An absent ratio is a missing value;
// a baseline's against itself (SelfRatio) is a plain 1 (no interval, no verdict).
Estimate EstimateOf(const MedianEstimate& m);
// How to read a ratio cell, for the notes under a table.
inline constexpr std::string_view kRatioLegend =
    "paired: A over B within each round, geometric mean over the rounds [95 % interval],\n"
    "  faster or slower where the interval excludes 1, ~ where it covers 1";
// The same for a run whose ratios may be `same` and whose intervals are
// read at a look's level (RatioRule): what each verdict says and how often
// it errs.
std::string VerdictLegend(const RatioRule& rule);
// The notes on a run's decisions: its ratios left `~` and the rounds that
// would likely decide each, and the precision where one was asked.
// The same as JSON: [{row, figure, ratio, ci, rounds, rounds_to_decide}].
nlohmann::json UndecidedJson(std::span<const UndecidedRatio> undecided);
void PrintDecisionNotes(std::span<const UndecidedRatio> undecided, int64_t rounds, double precision, bool precise,
                        double worst_half_width, std::ostream& out);
Estimate EstimateOf(const RatioEstimate& r, double precision = 0);
Cell RatioCell(const std::optional<RatioEstimate>& r, double precision = 0);
// The same cell, its estimate (if any) marked bucketed; and how to read the
// mark, for the notes under a table that has one.
Cell Bucketed(Cell cell);
std::string BucketedLegend();
// A cell as the text table shows it, doubles with `precision` digits. A
// ratio's point and interval ends share their digits, at least `precision`
// + 1 after the point and enough for kRatioDigits significant ones of the
// smallest, so that a point never looks outside its interval; a bucketed
// estimate with an interval is marked kBucketedMark.
inline constexpr int kRatioDigits = 3;
inline constexpr std::string_view kBucketedMark = "\u2020";  // a dagger
std::string TextOf(const Cell& cell, int precision);
// A figure that may be absent: the value, or a missing value.
inline Cell OptionalCell(const std::optional<double>& v) { return v ? Cell(*v) : Cell(std::monostate{}); }

// What a column holds. An estimate column with key K also has, in JSON,
// K_ci ([low, high] or null), K_bucketed and, for a ratio, K_verdict; in
// CSV, K_ci_low, K_ci_high and K_verdict. In text a median reads "1234.5
// ±1.1%" (half the interval's width) and a ratio "0.930 [0.911, 0.950]
// faster", a `*` after either that did not reach the precision asked for.
enum class ColumnKind { kValue, kMedian, kRatio };

struct Column {
  std::string key;      // what a row sets it by; JSON key and CSV header
  std::string heading;  // text-table heading; empty = machine outputs only
  int precision = 1;    // digits after the point for doubles in text
  ColumnKind kind = ColumnKind::kValue;
  bool text_only = false;  // in the text table alone (a figure derived for the eye)
};

// The version of the JSON every command writes: raised whenever a key is
// renamed or its meaning changes (tools/README.md lists each change).
// 2: one key per figure across commands (server_cpu_us, ...), latencies
// <figure>_<unit>_p<q>. 3: the `same` verdict, verdicts ending the rounds
// (`decided`), a row's `rounds`, intervals read at a look's level.
inline constexpr int kJsonSchemaVersion = 3;

class Report {
 public:
  // Every column's key is its own: a row's cells are set by it.
  explicit Report(std::vector<Column> columns);

  // A row being filled, its cells set by their columns' keys (as Google
  // Benchmark's json_reporter.cc writes each key beside its value): a new
  // column cannot shift another. A column left unset is a missing value.
  class Row {
   public:
    // Sets the cell of column `key`, which must be one of the report's and
    // not yet set in this row (a programming error otherwise: it aborts).
    Row& Set(std::string_view key, Cell cell);

   private:
    friend class Report;
    explicit Row(const Report& report) : report_(&report), cells_(report.columns_.size()), set_(cells_.size()) {}
    const Report* report_;
    std::vector<Cell> cells_;
    std::vector<bool> set_;
  };
  Row NewRow() const { return Row(*this); }
  void AddRow(Row row);
  // Whether a column has `key`.
  bool HasColumn(std::string_view key) const;
  // Header facts (machine, build, parameters) for the JSON object.
  void SetHeader(nlohmann::json header) { header_ = std::move(header); }

  void PrintText(std::ostream& out) const;
  // {"schema_version": kJsonSchemaVersion, "header": {...}, "rows": [{key: value}, ...]}
  nlohmann::json ToJson() const;
  // The columns the text table shows that JSON has too (a heading and a
  // key): what an HTML page of the same JSON shows.
  std::vector<Column> SharedColumns() const;
  void WriteCsv(std::ostream& out) const;

  // Writes JSON/CSV to `path`; an error names the file.
  absl::Status WriteJsonFile(const std::string& path) const;
  absl::Status WriteCsvFile(const std::string& path) const;
  // The --json and --csv outputs of a command: each file whose path is not
  // empty, JSON first.
  absl::Status WriteFiles(const std::string& json_path, const std::string& csv_path) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
  nlohmann::json header_ = nlohmann::json::object();
};

// Writes `text` to `path` (replacing it); an error names the file and why.
// Every file a command writes goes through here or the Report writers. The
// text goes to a temporary file beside it, renamed over `path` once whole:
// a write that fails (a full disk) leaves the old file as it was, or none,
// never a truncated one that passes for a result. What is not a regular file
// (/dev/stdout, a pipe) is written in place, and a link's file is replaced,
// the link kept.
absl::Status WriteTextFile(const std::string& path, std::string_view text);
// The same for text written as it is made (a file too large to build first).
absl::Status WriteTextFile(const std::string& path, const std::function<void(std::ostream&)>& write);

// Checks, before a run starts, the outputs a command was asked for:
//   - no two name the same file, however spelt (a link, "./", ".."): that is
//     a usage error (exit 2) naming both flags, for --out a file it gets
//     (`out_files`) or the directory itself;
//   - each can be written, so that a typo in a path does not cost the whole
//     run: the files (--json, --csv, --svg, --html, --pprof, --speedscope,
//     --trace, and the command's `file_flags`: the directory exists and is
//     writable, and the path is not a directory nor an existing file we may
//     not replace) and --out (a directory: it exists and is writable, or can
//     be created in its parent). An error names the flag and the path (a run
//     failure: exit 1).
// Nothing is created: a run that fails later leaves no empty file behind.
// `default_out`: the directory an --out left unsaid stands for, checked too.
absl::Status CheckOutputPaths(const Flags& flags, const std::string& default_out = "",
                              std::span<const std::string_view> out_files = {},
                              std::span<const std::string_view> file_flags = {});
// The same check for one more file a command writes (calibrate's
// --backend-profile), an error naming `flag`.
absl::Status CheckOutputFile(std::string_view flag, const std::string& path);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_REPORT_H_
