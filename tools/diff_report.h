// What a differential profile prints and writes, for `backendlab diff` and
// for the diffs `profile --baseline` and `pg --profile` make of their own
// runs: the folded diff and its flame graph, the functions that grew and
// shrank most, and their JSON. Formats profiling::FoldedDiff; computes
// nothing.
#ifndef BACKENDLAB_TOOLS_DIFF_REPORT_H_
#define BACKENDLAB_TOOLS_DIFF_REPORT_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "profiling/folded_diff.h"

namespace backendlab::tools {

// The functions listed as grown and as shrunk.
inline constexpr size_t kDiffTop = 10;

// Writes dir/NAME.folded (two columns: "stack A B" in the diff's unit) and
// dir/NAME.svg (the differential flame graph titled `title`), and adds both
// to `written`; the SVG also into `svg` when given. With `stopped` (a
// command's stop request), asked while the graph is drawn and before each
// file: once it says yes, Cancelled, and no file is written after.
absl::Status WriteDiff(const std::string& dir, const std::string& name, const std::string& title,
                       const profiling::FoldedDiff& diff, std::vector<std::string>& written, std::string* svg = nullptr,
                       bool (*stopped)() = nullptr);

// Cancelled, for a command stopped while it wrote: "interrupted", and the
// files it had written whole, if any.
absl::Status StoppedWriting(const std::vector<std::string>& written);

// The kDiffTop functions that grew most and shrank most, by their own
// value (self), in the diff's unit, with their totals; names with control
// characters escaped (OneLine).
void PrintDiffTop(const profiling::FoldedDiff& diff, std::ostream& out);

// {"unit", "a", "b", "a_total", "b_total", "grown": [...], "shrunk": [...]},
// each function {"name", "a_self", "b_self", "a_total", "b_total"}.
nlohmann::json DiffJson(const profiling::FoldedDiff& diff);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_DIFF_REPORT_H_
