// Text, CSV and JSON renderings of a Report.
#include "tools/report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <streambuf>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/check.h"
#include "base/histogram.h"

namespace backendlab::tools {

Estimate EstimateOf(const MedianEstimate& m) {
  return Estimate{.value = m.median, .interval = m.interval, .verdict = std::nullopt, .precise = true};
}

std::string VerdictLegend(const RatioRule& rule) {
  const bool looks = rule.confidence != kConfidence;
  std::string text;
  if (rule.same_within > 0) {
    absl::StrAppendFormat(&text,
                          "same where the whole interval lies within +-%.3g %% of 1 (any difference is smaller than that),\n"
                          "else faster or slower where it excludes 1, else ~ (this run cannot tell).\n",
                          100 * rule.same_within);
  } else {
    text = "faster or slower where the interval excludes 1, ~ where it covers 1 (this run cannot tell).\n";
  }
  if (looks) {
    absl::StrAppendFormat(&text,
                          "Intervals: %.2f %% at each of the run's looks, so that each covers its true ratio with 95 %%\n"
                          "whenever the run stopped (a group-sequential bound, base/statistics.h).",
                          100 * rule.confidence);
  } else {
    text += "Intervals: 95 %, the run's rounds fixed beforehand.";
  }
  text += rule.same_within > 0
              ? " Each verdict errs at most 2.5 % of the time: faster where the\ntruth is not faster, slower where it is not slower, same where the difference exceeds the band.\n"
              : " Faster errs at most 2.5 % of the time where the truth is not\nfaster, slower where it is not slower.\n";
  return text;
}

nlohmann::json UndecidedJson(std::span<const UndecidedRatio> undecided) {
  nlohmann::json list = nlohmann::json::array();
  for (const UndecidedRatio& u : undecided) {
    const RatioEstimate& r = u.estimate;
    list.push_back({{"row", u.row},
                    {"figure", u.figure},
                    {"ratio", r.ratio},
                    {"ci", r.has_interval ? nlohmann::json{r.interval.low, r.interval.high} : nlohmann::json(nullptr)},
                    {"rounds", r.rounds},
                    {"rounds_to_decide", r.rounds_to_decide > 0 ? nlohmann::json(r.rounds_to_decide) : nlohmann::json(nullptr)}});
  }
  return list;
}

void PrintDecisionNotes(std::span<const UndecidedRatio> undecided, int64_t rounds, double precision, bool precise,
                        double worst_half_width, std::ostream& out) {
  if (undecided.empty()) {
    out << "decided: every cost and rate ratio is faster, slower or same.\n";
  } else {
    out << "undecided: " << undecided.size() << " ratio" << (undecided.size() == 1 ? "" : "s")
        << " left ~ (raise --max-time, or --connections):\n";
    for (const UndecidedRatio& u : undecided) {
      const RatioEstimate& r = u.estimate;
      out << "  " << u.row << " " << u.figure << ": " << TextOf(EstimateOf(r), 2) << " over " << r.rounds << " rounds";
      if (r.rounds_to_decide > 0) {
        out << "; about " << r.rounds_to_decide << " would decide it at this point and spread";
      } else if (r.rounds_to_decide < 0) {
        out << "; no count of rounds likely decides it";
      }
      out << "\n";
    }
  }
  if (precision > 0) {
    out << absl::StrFormat("precision: every cost and rate ratio within +-%.3g %% ", 100 * precision)
        << (precise ? "reached" : "NOT reached")
        << absl::StrFormat(" after %d rounds (widest +-%.1f %%)", rounds, 100 * worst_half_width);
    if (!precise) out << "; * marks each ratio short of it (raise --max-time or --connections)";
    out << "\n";
  }
}

Estimate EstimateOf(const RatioEstimate& r, double precision) {
  Estimate e{.value = r.ratio, .interval = std::nullopt, .verdict = r.verdict, .precise = precision <= 0};
  if (r.has_interval) {
    e.interval = r.interval;
    if (precision > 0) e.precise = r.interval.RelativeHalfWidth(r.ratio) <= precision;
  }
  return e;
}

Cell RatioCell(const std::optional<RatioEstimate>& r, double precision) {
  if (!r) return std::monostate{};
  if (r->self) return 1.0;
  return EstimateOf(*r, precision);
}

Cell Bucketed(Cell cell) {
  if (auto* e = std::get_if<Estimate>(&cell)) e->bucketed = true;
  return cell;
}

std::string BucketedLegend() {
  return absl::StrFormat(
      "%s: of each round's median read off a histogram's buckets (each within %.0f %%): rounds whose medians share a\n"
      "  bucket agree exactly, so an interval narrower than that claims more than the buckets resolve",
      kBucketedMark, 100 * Histogram::kMaxRelativeError);
}

namespace {

// Digits after the point for a ratio and its interval's ends, the same for
// the three: rounding to one grid keeps their order, so the point never
// looks outside its interval (rounded apart, 0.015 [0.015, 0.015] read
// "0.01 [0.015, 0.015]"). At least `precision` + 1, as many as show
// kRatioDigits significant digits of the smallest.
int RatioDecimals(const Estimate& e, int precision) {
  double smallest = std::abs(e.value);
  if (e.interval) {
    for (double end : {e.interval->low, e.interval->high}) {
      if (end != 0 && (smallest == 0 || std::abs(end) < smallest)) smallest = std::abs(end);
    }
  }
  int decimals = precision + 1;
  if (smallest > 0 && std::isfinite(smallest)) {
    decimals = std::max(decimals, kRatioDigits - 1 - static_cast<int>(std::floor(std::log10(smallest))));
  }
  return std::min(decimals, 12);  // beyond, more digits than a reader can use
}

}  // namespace

std::string TextOf(const Cell& cell, int precision) {
  if (std::holds_alternative<std::monostate>(cell)) return "-";
  if (const auto* b = std::get_if<Boolean>(&cell)) return b->value ? "yes" : "no";
  if (const auto* v = std::get_if<Values>(&cell)) return absl::StrCat(v->size(), " values");
  if (const auto* e = std::get_if<Estimate>(&cell)) {
    const int p = e->verdict ? RatioDecimals(*e, precision) : precision;
    std::string text = absl::StrFormat("%.*f", p, e->value);
    if (e->interval) {
      // A ratio's interval by its ends, whose side of 1 is what tells; a median's by half its width.
      if (e->verdict) {
        absl::StrAppendFormat(&text, " [%.*f, %.*f]", p, e->interval->low, p, e->interval->high);
      } else {
        absl::StrAppendFormat(&text, " \u00b1%.1f%%", 100 * e->interval->RelativeHalfWidth(e->value));
      }
      if (e->bucketed) text += kBucketedMark;
    }
    if (e->verdict) (text += " ") += VerdictName(*e->verdict);
    if (!e->precise) text += "*";
    return text;
  }
  if (const auto* i = std::get_if<int64_t>(&cell)) return absl::StrCat(*i);
  if (const auto* d = std::get_if<double>(&cell)) return absl::StrFormat("%.*f", precision, *d);
  return std::get<std::string>(cell);
}

namespace {

std::string CsvOf(const Cell& cell) {
  if (std::holds_alternative<std::monostate>(cell)) return "";
  if (const auto* b = std::get_if<Boolean>(&cell)) return b->value ? "true" : "false";
  if (const auto* v = std::get_if<Values>(&cell)) {
    std::string joined;
    for (double x : *v) absl::StrAppend(&joined, joined.empty() ? "" : ";", absl::StrFormat("%.6g", x));
    return joined;
  }
  if (const auto* e = std::get_if<Estimate>(&cell)) return absl::StrFormat("%.6g", e->value);
  if (const auto* i = std::get_if<int64_t>(&cell)) return absl::StrCat(*i);
  if (const auto* d = std::get_if<double>(&cell)) return absl::StrFormat("%.6g", *d);
  const std::string& s = std::get<std::string>(cell);
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

nlohmann::json JsonOf(const Cell& cell) {
  if (std::holds_alternative<std::monostate>(cell)) return nullptr;
  if (const auto* b = std::get_if<Boolean>(&cell)) return b->value;
  if (const auto* v = std::get_if<Values>(&cell)) return *v;
  if (const auto* e = std::get_if<Estimate>(&cell)) return e->value;
  if (const auto* i = std::get_if<int64_t>(&cell)) return *i;
  if (const auto* d = std::get_if<double>(&cell)) return *d;
  return std::get<std::string>(cell);
}

// An estimate column's extra keys and their values: _ci, and _verdict for a
// ratio (JSON); _ci_low, _ci_high, _verdict (CSV).
const Estimate* EstimateIn(const Cell& cell) { return std::get_if<Estimate>(&cell); }

void AddJsonExtras(const Column& column, const Cell& cell, nlohmann::json& object) {
  if (column.kind == ColumnKind::kValue) return;
  const Estimate* e = EstimateIn(cell);
  object[column.key + "_ci"] =
      e != nullptr && e->interval ? nlohmann::json::array({e->interval->low, e->interval->high}) : nlohmann::json(nullptr);
  object[column.key + "_bucketed"] = e != nullptr ? nlohmann::json(e->bucketed) : nlohmann::json(nullptr);
  if (column.kind == ColumnKind::kRatio) {
    object[column.key + "_verdict"] =
        e != nullptr && e->verdict ? nlohmann::json(std::string(VerdictName(*e->verdict))) : nlohmann::json(nullptr);
    object[column.key + "_precise"] = e != nullptr ? nlohmann::json(e->precise) : nlohmann::json(nullptr);
  }
}

std::vector<std::string> CsvHeadings(const Column& column) {
  std::vector<std::string> h = {column.key};
  if (column.kind != ColumnKind::kValue) {
    h.push_back(column.key + "_ci_low");
    h.push_back(column.key + "_ci_high");
  }
  if (column.kind == ColumnKind::kRatio) h.push_back(column.key + "_verdict");
  return h;
}

std::vector<std::string> CsvCells(const Column& column, const Cell& cell) {
  std::vector<std::string> v = {CsvOf(cell)};
  if (column.kind == ColumnKind::kValue) return v;
  const Estimate* e = EstimateIn(cell);
  const bool ci = e != nullptr && e->interval.has_value();
  v.push_back(ci ? absl::StrFormat("%.6g", e->interval->low) : "");
  v.push_back(ci ? absl::StrFormat("%.6g", e->interval->high) : "");
  if (column.kind == ColumnKind::kRatio) v.push_back(e != nullptr && e->verdict ? std::string(VerdictName(*e->verdict)) : "");
  return v;
}

// The directory a file or directory at `path` would be created in.
std::string ParentOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

absl::Status CannotWrite(std::string_view flag, const std::string& path, const std::string& why) {
  return absl::FailedPreconditionError(absl::StrCat("--", std::string(flag), "=", Quoted(path), ": ", why));
}

// A directory we may create entries in.
absl::Status CheckWritableDirectory(std::string_view flag, const std::string& path, const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return CannotWrite(flag, path, absl::StrCat("no directory ", Quoted(dir)));
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return CannotWrite(flag, path, absl::StrCat("directory ", Quoted(dir), ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputDirectory(std::string_view flag, const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st)) {
    if (!std::filesystem::is_directory(st)) return CannotWrite(flag, path, "is not a directory");
    return CheckWritableDirectory(flag, path, path);
  }
  return CheckWritableDirectory(flag, path, ParentOf(path));
}

// The flags that name a file a command writes, in every command that has them.
constexpr std::string_view kFileFlags[] = {"json", "csv", "svg", "html", "pprof", "speedscope", "trace"};

// An output a command was asked for: its flag, its path, and how an error
// names it ("--json='x'", "--out='d' (its diff.svg)").
struct Output {
  std::string_view flag;
  std::string path;
  std::string said;
};

// `path` absolute, with '.' and '..' folded and the links of its existing
// part resolved.
std::filesystem::path Resolved(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec).lexically_normal();
  if (const std::filesystem::path c = std::filesystem::weakly_canonical(p, ec); !ec) p = c;
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "d/" is "d"
  return p;
}

// Two outputs of different flags naming one file (the same resolved path,
// or one inode by two hard links): a usage error naming both.
absl::Status CheckDistinct(const std::vector<Output>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (outputs[i].flag == outputs[j].flag) continue;  // --out and the files it gets
      std::error_code ec;
      if (Resolved(outputs[i].path) != Resolved(outputs[j].path) &&
          !std::filesystem::equivalent(outputs[i].path, outputs[j].path, ec)) {
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat(outputs[i].said, " and ", outputs[j].said,
                                                     " name the same file: give each output its own"));
    }
  }
  return absl::OkStatus();
}

// A stream buffer over a file descriptor, which keeps the first error of
// its writes (errno) for the caller to name.
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!Flush()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return Flush() ? 0 : -1; }

 private:
  bool Flush() {
    for (const char* p = pbase(); error_ == 0 && p < pptr();) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n >= 0) {
        p += n;
      } else if (errno != EINTR) {
        error_ = errno;
      }
    }
    setp(buffer_, buffer_ + sizeof buffer_);
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

// Runs `write` into `fd` and closes it: 0, or the errno of the first write
// (or of close) that failed; EIO where `write` failed its stream itself.
template <typename Write>
int WriteAndClose(int fd, Write& write) {
  int error = 0;
  {
    FdBuffer buffer(fd);
    std::ostream out(&buffer);
    try {
      write(out);
    } catch (...) {
      close(fd);
      throw;
    }
    out.flush();
    error = buffer.error() != 0 ? buffer.error() : out ? 0 : EIO;
  }
  if (close(fd) != 0 && error == 0) error = errno;
  return error;
}

absl::Status WriteFailed(const std::string& path, int error) {
  return absl::UnavailableError(absl::StrCat("cannot write ", Quoted(path), ": ", std::strerror(error)));
}

// Written where it is: a device or a pipe, or a file whose directory takes
// no temporary file. A regular file whose write failed is removed, or, if
// its directory forbids that, emptied: nothing half-written stays.
template <typename Write>
absl::Status WriteInPlace(const std::string& path, Write& write) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return WriteFailed(path, errno);
  struct stat st {};
  const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const int error = WriteAndClose(fd, write);
  if (error == 0) return absl::OkStatus();
  if (regular && unlink(path.c_str()) != 0 && truncate(path.c_str(), 0) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot write ", Quoted(path), ": ", std::strerror(error),
                                               "; what was written of it could not be removed"));
  }
  return WriteFailed(path, error);
}

// A temporary file beside `target` (a rename does not cross file systems),
// hidden, named by this process and a count: its descriptor and name, or -1
// (errno says why).
int OpenTemporary(const std::string& target, std::string& temp) {
  static std::atomic<uint64_t> count{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = absl::StrCat(ParentOf(target), "/.backendlab-", getpid(), "-", count.fetch_add(1), ".tmp");
    const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

// A replacement keeps the permissions of what it replaces and, for root, its
// owner. Best effort: a refusal leaves the new file as it was created.
void KeepModeAndOwner(int fd, const struct stat& st) {
  if (fchmod(fd, st.st_mode & 07777) != 0) return;
  if (geteuid() == 0 && fchown(fd, st.st_uid, st.st_gid) != 0) return;
}

template <typename Write>
absl::Status WriteFile(const std::string& path, Write write) {
  struct stat st {}, entry {};
  const bool exists = stat(path.c_str(), &st) == 0;
  // Renaming over a device or a pipe (/dev/stdout, /dev/null, <(...))
  // would replace it, and over a dangling link the link: those are written
  // in place (the link's file created).
  if (exists ? !S_ISREG(st.st_mode) : lstat(path.c_str(), &entry) == 0 && S_ISLNK(entry.st_mode)) {
    return WriteInPlace(path, write);
  }
  // A link's file is replaced, the link kept.
  std::error_code ec;
  const std::string target = exists ? std::filesystem::canonical(path, ec).string() : path;
  if (ec) return WriteInPlace(path, write);
  std::string temp;
  const int fd = OpenTemporary(target, temp);
  if (fd < 0) return WriteInPlace(path, write);  // a directory we may not add to: the file itself
  if (exists) KeepModeAndOwner(fd, st);
  int error = 0;
  try {
    error = WriteAndClose(fd, write);
  } catch (...) {
    unlink(temp.c_str());
    throw;
  }
  if (error == 0 && rename(temp.c_str(), target.c_str()) != 0) error = errno;
  if (error == 0) return absl::OkStatus();
  unlink(temp.c_str());
  return WriteFailed(path, error);
}

}  // namespace

absl::Status CheckOutputFile(std::string_view flag, const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) return CannotWrite(flag, path, "is a directory");
  if (std::filesystem::exists(st)) {
    if (access(path.c_str(), W_OK) != 0) return CannotWrite(flag, path, std::strerror(errno));
    return absl::OkStatus();
  }
  return CheckWritableDirectory(flag, path, ParentOf(path));
}

absl::Status CheckOutputPaths(const Flags& flags, const std::string& default_out,
                              std::span<const std::string_view> out_files, std::span<const std::string_view> file_flags) {
  std::vector<Output> outputs;
  for (const std::span<const std::string_view> names : {std::span<const std::string_view>(kFileFlags), file_flags}) {
    for (std::string_view flag : names) {
      if (!flags.Has(flag)) continue;
      outputs.push_back({flag, flags.Get(flag), absl::StrCat("--", std::string(flag), "=", Quoted(flags.Get(flag)))});
    }
  }
  const size_t files = outputs.size();
  const std::string out = flags.Has("out") ? flags.Get("out") : default_out;
  if (!out.empty()) {
    const std::string said = absl::StrCat("--out=", Quoted(out));
    outputs.push_back({"out", out, said});
    for (std::string_view name : out_files) {
      const std::string file(name);
      outputs.push_back({"out", absl::StrCat(out, "/", file), absl::StrCat(said, " (its ", file, ")")});
    }
  }
  if (absl::Status s = CheckDistinct(outputs); !s.ok()) return s;
  std::error_code ec;
  const bool out_made = !out.empty() && std::filesystem::is_directory(out, ec);
  for (size_t i = 0; i < files; ++i) {
    // A file in --out's directory, which the command makes first: that
    // directory's check below stands for its own.
    if (!out.empty() && !out_made && ParentOf(outputs[i].path) == out) continue;
    if (absl::Status s = CheckOutputFile(outputs[i].flag, outputs[i].path); !s.ok()) return s;
  }
  if (!out.empty()) return CheckOutputDirectory("out", out);
  return absl::OkStatus();
}

absl::Status WriteTextFile(const std::string& path, std::string_view text) {
  return WriteFile(path, [&](std::ostream& out) { out << text; });
}

absl::Status WriteTextFile(const std::string& path, const std::function<void(std::ostream&)>& write) {
  return WriteFile(path, write);
}

Report::Report(std::vector<Column> columns) : columns_(std::move(columns)) {
  for (size_t c = 0; c < columns_.size(); ++c) {
    BACKENDLAB_CHECK(!columns_[c].key.empty());
    for (size_t d = 0; d < c; ++d) BACKENDLAB_CHECK(columns_[d].key != columns_[c].key);
  }
}

bool Report::HasColumn(std::string_view key) const {
  return std::any_of(columns_.begin(), columns_.end(), [&](const Column& c) { return c.key == key; });
}

Report::Row& Report::Row::Set(std::string_view key, Cell cell) {
  const std::vector<Column>& columns = report_->columns_;
  const auto at = std::find_if(columns.begin(), columns.end(), [&](const Column& c) { return c.key == key; });
  BACKENDLAB_CHECK(at != columns.end());
  const size_t c = static_cast<size_t>(at - columns.begin());
  BACKENDLAB_CHECK(!set_[c]);
  set_[c] = true;
  cells_[c] = std::move(cell);
  return *this;
}

void Report::AddRow(Row row) {
  BACKENDLAB_CHECK(row.report_ == this);
  rows_.push_back(std::move(row.cells_));
}

// Columns as the eye counts them: code points, not bytes ("±" is two).
size_t DisplayWidth(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

void Report::PrintText(std::ostream& out) const {
  std::vector<size_t> shown;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (!columns_[c].heading.empty()) shown.push_back(c);
  }
  std::vector<size_t> width(columns_.size(), 0);
  for (size_t c : shown) {
    width[c] = DisplayWidth(columns_[c].heading);
    for (const auto& row : rows_) width[c] = std::max(width[c], DisplayWidth(TextOf(row[c], columns_[c].precision)));
  }
  auto emit = [&](size_t c, const std::string& text, bool first) {
    // First column (a name) left-aligned, numbers right-aligned.
    const std::string pad(width[c] - DisplayWidth(text), ' ');
    out << (first ? "" : "  ") << (first ? text + pad : pad + text);
  };
  for (size_t i = 0; i < shown.size(); ++i) emit(shown[i], columns_[shown[i]].heading, i == 0);
  out << "\n";
  for (const auto& row : rows_) {
    for (size_t i = 0; i < shown.size(); ++i) emit(shown[i], TextOf(row[shown[i]], columns_[shown[i]].precision), i == 0);
    out << "\n";
  }
}

std::vector<Column> Report::SharedColumns() const {
  std::vector<Column> shared;
  for (const Column& c : columns_) {
    if (!c.text_only && !c.heading.empty()) shared.push_back(c);
  }
  return shared;
}

nlohmann::json Report::ToJson() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : rows_) {
    nlohmann::json object = nlohmann::json::object();
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (columns_[c].text_only) continue;
      object[columns_[c].key] = JsonOf(row[c]);
      AddJsonExtras(columns_[c], row[c], object);
    }
    rows.push_back(std::move(object));
  }
  return {{"schema_version", kJsonSchemaVersion}, {"header", header_}, {"rows", std::move(rows)}};
}

void Report::WriteCsv(std::ostream& out) const {
  std::vector<size_t> keyed;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (!columns_[c].text_only) keyed.push_back(c);
  }
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << cells[i];
    out << "\n";
  };
  std::vector<std::string> headings;
  for (size_t c : keyed) {
    for (std::string& h : CsvHeadings(columns_[c])) headings.push_back(std::move(h));
  }
  line(headings);
  for (const auto& row : rows_) {
    std::vector<std::string> cells;
    for (size_t c : keyed) {
      for (std::string& v : CsvCells(columns_[c], row[c])) cells.push_back(std::move(v));
    }
    line(cells);
  }
}

absl::Status Report::WriteJsonFile(const std::string& path) const {
  return WriteFile(path, [&](std::ostream& out) { out << ToJson().dump(2) << "\n"; });
}

absl::Status Report::WriteCsvFile(const std::string& path) const {
  return WriteFile(path, [&](std::ostream& out) { WriteCsv(out); });
}

absl::Status Report::WriteFiles(const std::string& json_path, const std::string& csv_path) const {
  if (!json_path.empty()) {
    if (absl::Status s = WriteJsonFile(json_path); !s.ok()) return s;
  }
  if (!csv_path.empty()) return WriteCsvFile(csv_path);
  return absl::OkStatus();
}

}  // namespace backendlab::tools
