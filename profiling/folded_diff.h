// Two profiles of one workload set against each other: every stack's value
// in a unit both share (microseconds per connection, or per second of CPU),
// the difference as folded text and as a flame graph coloured by change,
// and the functions that grew and shrank most.
#ifndef BACKENDLAB_PROFILING_FOLDED_DIFF_H_
#define BACKENDLAB_PROFILING_FOLDED_DIFF_H_

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "profiling/flame_graph.h"
#include "profiling/folded_stacks.h"

namespace backendlab::profiling {

// What one sample of a profile is worth in the diff's unit: a profile of
// N connections whose samples are each 1/F s of CPU is worth 1e6 / F / N us
// per connection a sample.
struct DiffSide {
  const FoldedStacks* stacks = nullptr;
  double per_sample = 1;
  std::string name;  // "array/always", "15/128MB hold 0": the graph's and the text's
};

struct StackDelta {
  std::string stack;  // frames joined by ';', root first
  double a = 0;       // in the diff's unit; 0 where the stack is on one side only
  double b = 0;
};

// A function's value on each side: self (as the leaf frame), total
// (anywhere on the stack, once per stack).
struct FunctionDelta {
  std::string name;
  double a_self = 0, b_self = 0;
  double a_total = 0, b_total = 0;
  double self_change() const { return b_self - a_self; }
};

class FoldedDiff {
 public:
  // `unit` names what a value is ("us per connection"). Time and memory
  // grow with the frames of the two sides' stacks, not with their square.
  static FoldedDiff Of(const DiffSide& a, const DiffSide& b, std::string unit);
  // The same, asking `stopped` at every stack (a command's stop request,
  // base/interrupt.h): nullopt once it says yes.
  static std::optional<FoldedDiff> Of(const DiffSide& a, const DiffSide& b, std::string unit, bool (*stopped)());

  const std::vector<StackDelta>& stacks() const { return stacks_; }  // by stack, every one of either side
  double a_total() const { return a_total_; }
  double b_total() const { return b_total_; }
  const std::string& unit() const { return unit_; }
  const std::string& a_name() const { return a_name_; }
  const std::string& b_name() const { return b_name_; }
  // The most frames of any stack (0 for none).
  size_t deepest() const { return deepest_; }

  // One line per stack, "stack A B", sorted by stack, values with up to 6
  // significant digits: the two-column input FlameGraph's difffolded.pl
  // writes and flamegraph.pl draws.
  std::string ToText() const;
  void WriteText(std::ostream& out) const;  // the same, streamed

  // The `n` functions whose self value grew most (b > a), most first; and
  // those that shrank most (b < a), most first. Ties: by name.
  std::vector<FunctionDelta> Grown(size_t n) const;
  std::vector<FunctionDelta> Shrunk(size_t n) const;

 private:
  // Sets functions_ and deepest_ from stacks_; false once `stopped` says yes.
  bool MakeFunctions(bool (*stopped)());

  std::vector<StackDelta> stacks_;
  std::vector<FunctionDelta> functions_;  // by name: computed once
  size_t deepest_ = 0;
  double a_total_ = 0;
  double b_total_ = 0;
  std::string unit_;
  std::string a_name_, b_name_;
};

// A differential flame graph, self-contained SVG with the same search and
// click-to-zoom as RenderFlameGraphSvg's: two graphs, one above the other,
// each frame coloured by its change (its total, b - a): red where it grew,
// blue where it shrank, the more saturated the larger the change against
// the largest; grey where it did not change. The upper graph is b's widths
// (a frame on b's side only shows there), the lower a's (a frame on a's
// side only shows there, blue). Each frame's title gives both values and
// the change. As RenderFlameGraphSvg, frames deeper than options.max_depth
// are not drawn, and "" is returned once options.stopped says yes.
std::string RenderDiffFlameGraphSvg(const FoldedDiff& diff, const FlameGraphOptions& options = {});

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_FOLDED_DIFF_H_
