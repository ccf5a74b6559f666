// Folding `perf script` samples into stacks, written from the output format.
#include "profiling/perf_script.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "profiling/internal/text.h"
#include "profiling/symbolizer.h"

namespace backendlab::profiling {
namespace {

using internal::IsSpace;
using internal::TakeLine;
using internal::Trim;


bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsHexDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

// "pid" or "pid/tid".
bool IsPidToken(std::string_view token) {
  size_t slash = token.find('/');
  if (slash == std::string_view::npos) return IsDigits(token);
  return IsDigits(token.substr(0, slash)) && IsDigits(token.substr(slash + 1));
}

// The comm of a header line: everything before the first pid token, since a
// comm may itself contain spaces ("Web Content").
std::optional<std::string> CommOf(std::string_view header) {
  size_t pos = 0;
  while (pos < header.size()) {
    while (pos < header.size() && IsSpace(header[pos])) ++pos;
    size_t end = pos;
    while (end < header.size() && !IsSpace(header[end])) ++end;
    if (pos > 0 && IsPidToken(header.substr(pos, end - pos))) {
      std::string comm(Trim(header.substr(0, pos)));
      std::replace(comm.begin(), comm.end(), ' ', '_');
      std::replace(comm.begin(), comm.end(), '\t', '_');
      return comm;
    }
    pos = end;
  }
  return std::nullopt;
}

// "/usr/lib/libc.so.6" -> "[libc.so.6]", as the symbolizer names a frame
// without a symbol; "[unknown]" and "[kernel.kallsyms]" stay as they are.
std::string ObjectFrame(std::string_view dso) {
  if (dso.empty()) return "[unknown]";
  if (dso.front() == '[') return std::string(dso);
  return absl::StrCat("[", std::string(dso.substr(dso.rfind('/') + 1)), "]");
}

struct Frame {
  std::string symbol;
  bool kernel = false;
};

// "addr symbol+0xoff (dso)" -> "symbol", and whether it is the kernel's.
Frame FrameOf(std::string_view frame_line) {
  std::string_view rest = Trim(frame_line);
  const size_t space = rest.find_first_of(" \t");
  const std::string_view address = rest.substr(0, space);
  Frame frame;
  frame.kernel = address.size() == 16 && address.starts_with("ffff");
  if (space == std::string_view::npos) {  // an address alone
    frame.symbol = "[unknown]";
    return frame;
  }
  rest = Trim(rest.substr(space + 1));
  // The dso is the last parenthesised group; demangled symbols may hold
  // parentheses of their own, so search from the end.
  std::string_view dso;
  if (!rest.empty() && rest.back() == ')') {
    // "(anonymous namespace)::F+0x1d (/bin/x)" starts with '(' too: only a
    // line with no " (" is a dso alone.
    size_t open = rest.rfind(" (");
    if (open == std::string_view::npos && rest.front() == '(') open = 0;
    if (open != std::string_view::npos) {
      const size_t dso_start = open == 0 ? 1 : open + 2;
      dso = rest.substr(dso_start, rest.size() - dso_start - 1);
      rest = open == 0 ? std::string_view() : Trim(rest.substr(0, open));
    }
  }
  frame.kernel |= dso.starts_with("[kernel");
  const size_t plus = rest.rfind("+0x");
  if (plus != std::string_view::npos && IsHexDigits(rest.substr(plus + 3))) rest = rest.substr(0, plus);
  // No symbol: name the frame by its object.
  frame.symbol = rest.empty() || rest == "[unknown]" ? ObjectFrame(dso) : std::string(rest);
  return frame;
}

}  // namespace

absl::StatusOr<FoldedStacks> ParsePerfScript(std::string_view text, const PerfScriptOptions& options) {
  FoldedStacks result;
  std::optional<std::string> comm;  // set while inside a sample
  std::vector<std::string> leaf_first;
  auto finish_sample = [&] {
    if (!comm.has_value()) return;
    std::vector<std::string> root_first;
    root_first.reserve(leaf_first.size() + 1);
    root_first.push_back(*comm);
    root_first.insert(root_first.end(), leaf_first.rbegin(), leaf_first.rend());
    result.Add(root_first, 1);
    comm.reset();
    leaf_first.clear();
  };

  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::string_view line = TakeLine(text);

    if (Trim(line).empty()) {
      finish_sample();
      continue;
    }
    if (line.front() == '#') continue;
    if (IsSpace(line.front())) {
      if (!comm.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("perf script line ", line_number, ": frame line outside a sample"));
      }
      Frame frame = FrameOf(line);
      if (options.drop_kernel_frames && frame.kernel) continue;
      leaf_first.push_back(options.short_names ? ShortFunctionName(frame.symbol) : std::move(frame.symbol));
      continue;
    }
    // A header directly after another sample's frames (no blank line) starts
    // a new sample all the same.
    finish_sample();
    comm = CommOf(line);
    if (!comm.has_value() || comm->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("perf script line ", line_number, ": sample header without a pid"));
    }
  }
  finish_sample();
  return result;
}

}  // namespace backendlab::profiling
