// The differential profile's files, top lists and JSON.
#include "tools/diff_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/flags.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

void PrintList(const std::vector<profiling::FunctionDelta>& list, std::ostream& out) {
  if (list.empty()) {
    out << "  (none)\n";
    return;
  }
  out << absl::StrFormat("  %10s %10s %10s %10s %10s  %s\n", "self A", "self B", "change", "total A", "total B",
                         "function");
  for (const profiling::FunctionDelta& f : list) {
    out << absl::StrFormat("  %10.4g %10.4g %+10.4g %10.4g %10.4g  %s\n", f.a_self, f.b_self, f.self_change(),
                           f.a_total, f.b_total, OneLine(f.name));
  }
}

nlohmann::json ListJson(const std::vector<profiling::FunctionDelta>& list) {
  nlohmann::json j = nlohmann::json::array();
  for (const profiling::FunctionDelta& f : list) {
    j.push_back({{"name", f.name}, {"a_self", f.a_self}, {"b_self", f.b_self}, {"a_total", f.a_total},
                 {"b_total", f.b_total}});
  }
  return j;
}

}  // namespace

absl::Status StoppedWriting(const std::vector<std::string>& written) {
  if (written.empty()) return absl::CancelledError("interrupted: nothing written");
  std::string files;
  for (const std::string& f : written) absl::StrAppend(&files, files.empty() ? "" : ", ", Quoted(f));
  return absl::CancelledError(absl::StrCat("interrupted: only ", files, " written, each whole"));
}

absl::Status WriteDiff(const std::string& dir, const std::string& name, const std::string& title,
                       const profiling::FoldedDiff& diff, std::vector<std::string>& written, std::string* svg,
                       bool (*stopped)()) {
  // Drawn first: the long part, which a stop ends before any file is written.
  auto stop = [&] { return stopped != nullptr && stopped(); };
  const std::string drawn = profiling::RenderDiffFlameGraphSvg(diff, {.title = title, .stopped = stopped});
  if (stop()) return StoppedWriting(written);
  const std::string folded = absl::StrCat(dir, "/", name, ".folded");
  if (absl::Status s = WriteTextFile(folded, [&](std::ostream& out) { diff.WriteText(out); }); !s.ok()) return s;
  written.push_back(folded);
  if (stop()) return StoppedWriting(written);
  const std::string path = absl::StrCat(dir, "/", name, ".svg");
  if (absl::Status s = WriteTextFile(path, drawn); !s.ok()) return s;
  written.push_back(path);
  if (svg != nullptr) *svg = drawn;
  return absl::OkStatus();
}

void PrintDiffTop(const profiling::FoldedDiff& diff, std::ostream& out) {
  out << absl::StrFormat("A = %s (%.4g in all), B = %s (%.4g in all), in %s:\n", diff.a_name(), diff.a_total(),
                         diff.b_name(), diff.b_total(), diff.unit());
  out << absl::StrFormat("grew most (self: as the leaf frame; total: anywhere on the stack), top %d:\n", kDiffTop);
  PrintList(diff.Grown(kDiffTop), out);
  out << absl::StrFormat("shrank most, top %d:\n", kDiffTop);
  PrintList(diff.Shrunk(kDiffTop), out);
}

nlohmann::json DiffJson(const profiling::FoldedDiff& diff) {
  return {{"unit", diff.unit()},
          {"a", diff.a_name()},
          {"b", diff.b_name()},
          {"a_total", diff.a_total()},
          {"b_total", diff.b_total()},
          {"grown", ListJson(diff.Grown(kDiffTop))},
          {"shrunk", ListJson(diff.Shrunk(kDiffTop))}};
}

}  // namespace backendlab::tools
