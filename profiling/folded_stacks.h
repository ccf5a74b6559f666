// Stack samples aggregated in the "folded" format that flame-graph tools share:
// one line per distinct stack, "root;caller;leaf COUNT".
#ifndef BACKENDLAB_PROFILING_FOLDED_STACKS_H_
#define BACKENDLAB_PROFILING_FOLDED_STACKS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace backendlab::profiling {

// One function's share of the samples.
struct FunctionSamples {
  std::string name;
  int64_t self = 0;   // samples where the function is the leaf frame
  int64_t total = 0;  // samples where it is anywhere on the stack, once per stack
  double self_percent = 0;
  double total_percent = 0;

  friend bool operator==(const FunctionSamples&, const FunctionSamples&) = default;
};

class FoldedStacks {
 public:
  // Adds `count` samples of the stack `frames_root_first`. ';' and line breaks
  // inside a frame become '_', whitespace at its ends is dropped, and an empty
  // frame becomes "[unknown]", because the folded format cannot carry them. An empty stack or count < 1 is a
  // caller bug and aborts.
  void Add(std::span<const std::string> frames_root_first, int64_t count);

  // Reads the folded format: "frame;frame;frame COUNT" per line, root first,
  // integer COUNT >= 1, blank lines skipped. Repeated stacks are summed. A
  // malformed line, a line longer than FoldedStacksReader::kMaxLineBytes, or
  // counts adding up past 2^63-1, is InvalidArgument naming its (1-based)
  // line number. (FoldedStacksReader reads the same a piece at a time.)
  static absl::StatusOr<FoldedStacks> Parse(std::string_view text);

  // The folded format, lines sorted lexicographically so the output is
  // deterministic; Parse(ToText()) == *this.
  std::string ToText() const;

  // The stacks whose root frame is `root`, with that frame removed (a stack of
  // the root alone becomes "[self]"): e.g. one process's stacks out of perf's,
  // whose root is the command name.
  FoldedStacks Under(std::string_view root) const;

  int64_t total_samples() const { return total_samples_; }
  // Distinct stacks, keyed by their frames joined with ';'.
  const std::map<std::string, int64_t>& stacks() const { return stacks_; }

  // The `n` functions with the most self samples (ties: more total samples,
  // then name), each with self and total counts and their percentage of all
  // samples. A recursive function counts once per stack in `total`.
  std::vector<FunctionSamples> TopN(size_t n) const;

  friend bool operator==(const FoldedStacks&, const FoldedStacks&) = default;

 private:
  friend class FoldedStacksReader;

  std::map<std::string, int64_t> stacks_;
  int64_t total_samples_ = 0;
};

// The folded format read as it comes, a piece at a time (a file read in
// blocks, a pipe): what it holds is the stacks and at most one line, so its
// memory is bounded by the distinct stacks, not by the input's size, and a
// line too long is refused as soon as it is, not read whole first.
class FoldedStacksReader {
 public:
  // A stack is one line; 16 MiB holds a million frames of 16 bytes, far
  // beyond what profilers record (perf's default depth is 127 frames, the
  // sampler's kMaxFrames 64): a longer line is not a profile's.
  static constexpr size_t kMaxLineBytes = size_t{16} << 20;

  // Reads the next piece of the input; a line may run across pieces. An
  // error is Parse's (InvalidArgument naming the line); it ends the reading,
  // and later calls return it again.
  absl::Status Read(std::string_view piece);
  // The end of the input (its last line needs no newline): the stacks read.
  absl::StatusOr<FoldedStacks> Finish() &&;

 private:
  absl::Status ReadLine(std::string_view line);
  absl::Status TooLong() const;

  FoldedStacks stacks_;
  std::string partial_;     // the line being read, not yet ended
  size_t line_number_ = 0;  // of the last line ended
  absl::Status error_;
};

// The frames of a folded stack key ("a;b;c"), root first.
std::vector<std::string_view> SplitFrames(std::string_view stack);

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_FOLDED_STACKS_H_
