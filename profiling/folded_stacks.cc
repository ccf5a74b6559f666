// Folded stacks: parsing, printing and per-function totals.
#include "profiling/folded_stacks.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "profiling/internal/text.h"
#include "absl/strings/str_join.h"
#include "base/check.h"

namespace backendlab::profiling {
namespace {

using internal::TrimRight;

std::string SanitizeFrame(const std::string& frame) {
  // Whitespace at a frame's ends goes: at the leaf's end Parse would take it
  // for the space before the count.
  const std::string_view trimmed = internal::Trim(frame);
  if (trimmed.empty()) return "[unknown]";
  std::string out(trimmed);
  for (char& c : out) {
    if (c == ';' || c == '\n' || c == '\r') c = '_';
  }
  return out;
}


absl::Status LineError(size_t line_number, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("folded stacks line ", line_number, ": ", std::string(what)));
}

// A decimal count >= 1 without sign, or -1.
int64_t ParseCount(std::string_view digits) {
  if (digits.empty()) return -1;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    if (value > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10) return -1;
    value = value * 10 + (c - '0');
  }
  return value >= 1 ? value : -1;
}

}  // namespace

FoldedStacks FoldedStacks::Under(std::string_view root) const {
  FoldedStacks out;
  const std::string prefix = std::string(root) + ";";
  for (const auto& [stack, count] : stacks_) {
    std::string rest;
    if (stack == root) {
      rest = "[self]";
    } else if (stack.starts_with(prefix)) {
      rest = stack.substr(prefix.size());
    } else {
      continue;
    }
    out.stacks_[rest] += count;
    out.total_samples_ += count;
  }
  return out;
}

std::vector<std::string_view> SplitFrames(std::string_view stack) {
  std::vector<std::string_view> frames;
  size_t start = 0;
  while (true) {
    size_t end = stack.find(';', start);
    if (end == std::string_view::npos) {
      frames.push_back(stack.substr(start));
      return frames;
    }
    frames.push_back(stack.substr(start, end - start));
    start = end + 1;
  }
}

void FoldedStacks::Add(std::span<const std::string> frames_root_first, int64_t count) {
  BACKENDLAB_CHECK(!frames_root_first.empty());
  BACKENDLAB_CHECK(count >= 1);
  std::string key;
  for (const std::string& frame : frames_root_first) {
    if (!key.empty()) key += ';';
    key += SanitizeFrame(frame);
  }
  stacks_[key] += count;
  total_samples_ += count;
}

absl::StatusOr<FoldedStacks> FoldedStacks::Parse(std::string_view text) {
  FoldedStacksReader reader;
  if (absl::Status s = reader.Read(text); !s.ok()) return s;
  return std::move(reader).Finish();
}

absl::Status FoldedStacksReader::TooLong() const {
  return LineError(line_number_ + 1, absl::StrCat("longer than ", kMaxLineBytes >> 20,
                                                  " MiB (a line is one stack: this is not folded stacks)"));
}

absl::Status FoldedStacksReader::Read(std::string_view piece) {
  if (!error_.ok()) return error_;
  while (!piece.empty()) {
    const size_t newline = piece.find('\n');
    const std::string_view part = piece.substr(0, newline);
    if (partial_.size() + part.size() > kMaxLineBytes) return error_ = TooLong();
    if (newline == std::string_view::npos) {
      partial_.append(part);
      return absl::OkStatus();
    }
    piece.remove_prefix(newline + 1);
    // A line within the piece is read where it lies; only one that began
    // in an earlier piece is put together first.
    if (partial_.empty()) {
      error_ = ReadLine(part);
    } else {
      partial_.append(part);
      error_ = ReadLine(partial_);
      partial_.clear();
    }
    if (!error_.ok()) return error_;
  }
  return absl::OkStatus();
}

absl::StatusOr<FoldedStacks> FoldedStacksReader::Finish() && {
  if (error_.ok() && !partial_.empty()) error_ = ReadLine(partial_);
  if (!error_.ok()) return error_;
  return std::move(stacks_);
}

absl::Status FoldedStacksReader::ReadLine(std::string_view text) {
  const size_t line_number = ++line_number_;
  const std::string_view line = TrimRight(text);
  if (line.empty()) return absl::OkStatus();

  // The count follows the last space: frames themselves may contain spaces
  // (C++ template arguments).
  size_t space = line.find_last_of(" \t");
  if (space == std::string_view::npos) return LineError(line_number, "missing count");
  int64_t count = ParseCount(line.substr(space + 1));
  if (count < 1) {
    return LineError(line_number, absl::StrCat("count \"", std::string(line.substr(space + 1)),
                                               "\" is not an integer >= 1"));
  }
  if (count > std::numeric_limits<int64_t>::max() - stacks_.total_samples_) {
    return LineError(line_number, "the counts add up past 2^63-1");
  }
  std::string_view stack = TrimRight(line.substr(0, space));
  if (stack.empty()) return LineError(line_number, "missing stack");
  // The line's stack is the key as it stands unless a frame has
  // whitespace at an end (which Add trims). Frame by frame, in one pass:
  // no list of a deep stack's frames.
  bool trimmed = true;
  for (std::string_view rest = stack;;) {
    const size_t semi = rest.find(';');
    const std::string_view frame = rest.substr(0, semi);
    if (frame.empty()) return LineError(line_number, "empty frame");
    trimmed = trimmed && internal::Trim(frame).size() == frame.size();
    if (semi == std::string_view::npos) break;
    rest.remove_prefix(semi + 1);
  }
  std::map<std::string, int64_t>& stacks = stacks_.stacks_;
  if (!trimmed) {
    std::vector<std::string> frames;
    for (std::string_view frame : SplitFrames(stack)) frames.emplace_back(frame);
    stacks_.Add(frames, count);
  } else if (stacks.empty() || stacks.rbegin()->first < stack) {
    // Files are mostly sorted (every writer of folded stacks sorts them):
    // a key past the last goes in at the end, with one comparison.
    stacks.emplace_hint(stacks.end(), std::string(stack), count);
    stacks_.total_samples_ += count;
  } else {
    stacks[std::string(stack)] += count;
    stacks_.total_samples_ += count;
  }
  return absl::OkStatus();
}

std::string FoldedStacks::ToText() const {
  std::vector<std::string> lines;
  lines.reserve(stacks_.size());
  for (const auto& [stack, count] : stacks_) lines.push_back(absl::StrCat(stack, " ", count));
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& line : lines) absl::StrAppend(&out, line, "\n");
  return out;
}

std::vector<FunctionSamples> FoldedStacks::TopN(size_t n) const {
  std::unordered_map<std::string_view, FunctionSamples> by_name;
  for (const auto& [stack, count] : stacks_) {
    std::vector<std::string_view> frames = SplitFrames(stack);
    std::set<std::string_view> seen;  // recursion: once per stack in total
    for (std::string_view frame : frames) {
      if (seen.insert(frame).second) by_name[frame].total += count;
    }
    by_name[frames.back()].self += count;
  }
  std::vector<FunctionSamples> functions;
  functions.reserve(by_name.size());
  for (auto& [name, samples] : by_name) {
    samples.name = std::string(name);
    if (total_samples_ > 0) {
      samples.self_percent = 100.0 * static_cast<double>(samples.self) / total_samples_;
      samples.total_percent = 100.0 * static_cast<double>(samples.total) / total_samples_;
    }
    functions.push_back(std::move(samples));
  }
  std::sort(functions.begin(), functions.end(),
            [](const FunctionSamples& a, const FunctionSamples& b) {
              if (a.self != b.self) return a.self > b.self;
              if (a.total != b.total) return a.total > b.total;
              return a.name < b.name;
            });
  if (functions.size() > n) functions.resize(n);
  return functions;
}

}  // namespace backendlab::profiling
