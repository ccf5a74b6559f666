// Two folded profiles in one unit: their stacks side by side, the functions
// that moved most, and the differential flame graph.
#include "profiling/folded_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "profiling/internal/flame_svg.h"

namespace backendlab::profiling {
namespace {

std::string Number(double v) { return absl::StrFormat("%.6g", v); }

// Red for growth, blue for shrinkage, white to fully saturated as the
// change goes from none to the largest of the graph; a frame that did not
// change is grey.
std::string ChangeColor(double change, double largest) {
  if (largest <= 0 || std::abs(change) <= largest * 1e-9) return "rgb(220,220,220)";
  const double s = std::min(1.0, std::abs(change) / largest);
  const int fade = static_cast<int>(std::lround(235 * (1 - s)));  // 0 at the largest change
  return change > 0 ? absl::StrFormat("rgb(255,%d,%d)", fade, fade) : absl::StrFormat("rgb(%d,%d,255)", fade, fade);
}

}  // namespace

FoldedDiff FoldedDiff::Of(const DiffSide& a, const DiffSide& b, std::string unit) {
  FoldedDiff d;
  d.unit_ = std::move(unit);
  d.a_name_ = a.name;
  d.b_name_ = b.name;
  std::map<std::string, StackDelta> by_stack;
  for (const auto& [stack, count] : a.stacks->stacks()) {
    StackDelta& s = by_stack[stack];
    s.stack = stack;
    s.a = static_cast<double>(count) * a.per_sample;
    d.a_total_ += s.a;
  }
  for (const auto& [stack, count] : b.stacks->stacks()) {
    StackDelta& s = by_stack[stack];
    s.stack = stack;
    s.b = static_cast<double>(count) * b.per_sample;
    d.b_total_ += s.b;
  }
  d.stacks_.reserve(by_stack.size());
  for (auto& [stack, delta] : by_stack) d.stacks_.push_back(std::move(delta));
  return d;
}

std::string FoldedDiff::ToText() const {
  std::string text;
  for (const StackDelta& s : stacks_) absl::StrAppend(&text, s.stack, " ", Number(s.a), " ", Number(s.b), "\n");
  return text;
}

std::vector<FunctionDelta> FoldedDiff::Functions() const {
  std::map<std::string_view, FunctionDelta> by_name;
  for (const StackDelta& s : stacks_) {
    const std::vector<std::string_view> frames = SplitFrames(s.stack);
    std::set<std::string_view> seen;  // recursion: once per stack in total
    for (std::string_view frame : frames) {
      if (!seen.insert(frame).second) continue;
      FunctionDelta& f = by_name[frame];
      f.a_total += s.a;
      f.b_total += s.b;
    }
    FunctionDelta& leaf = by_name[frames.back()];
    leaf.a_self += s.a;
    leaf.b_self += s.b;
  }
  std::vector<FunctionDelta> functions;
  functions.reserve(by_name.size());
  for (auto& [name, f] : by_name) {
    f.name = std::string(name);
    functions.push_back(std::move(f));
  }
  return functions;
}

std::vector<FunctionDelta> FoldedDiff::Grown(size_t n) const {
  std::vector<FunctionDelta> grown;
  for (FunctionDelta& f : Functions()) {
    if (f.self_change() > 0) grown.push_back(std::move(f));
  }
  std::sort(grown.begin(), grown.end(), [](const FunctionDelta& x, const FunctionDelta& y) {
    return x.self_change() != y.self_change() ? x.self_change() > y.self_change() : x.name < y.name;
  });
  if (grown.size() > n) grown.resize(n);
  return grown;
}

std::vector<FunctionDelta> FoldedDiff::Shrunk(size_t n) const {
  std::vector<FunctionDelta> shrunk;
  for (FunctionDelta& f : Functions()) {
    if (f.self_change() < 0) shrunk.push_back(std::move(f));
  }
  std::sort(shrunk.begin(), shrunk.end(), [](const FunctionDelta& x, const FunctionDelta& y) {
    return x.self_change() != y.self_change() ? x.self_change() < y.self_change() : x.name < y.name;
  });
  if (shrunk.size() > n) shrunk.resize(n);
  return shrunk;
}

std::string RenderDiffFlameGraphSvg(const FoldedDiff& diff, const FlameGraphOptions& options) {
  // One tree per side, each node knowing the other side's value at the same
  // path: its width comes from its own side, its colour from the change.
  internal::FlameNode before, after;
  for (const StackDelta& s : diff.stacks()) {
    before.value += s.a;
    before.other += s.b;
    after.value += s.b;
    after.other += s.a;
    internal::FlameNode* a = &before;
    internal::FlameNode* b = &after;
    for (std::string_view frame : SplitFrames(s.stack)) {
      a = &a->children[std::string(frame)];
      b = &b->children[std::string(frame)];
      a->value += s.a;
      a->other += s.b;
      b->value += s.b;
      b->other += s.a;
    }
  }
  double largest = 0;
  std::function<void(const internal::FlameNode&)> widest = [&](const internal::FlameNode& n) {
    largest = std::max(largest, std::abs(n.value - n.other));
    for (const auto& [name, child] : n.children) widest(child);
  };
  for (const auto& [name, child] : after.children) widest(child);
  for (const auto& [name, child] : before.children) widest(child);
  const std::string& unit = diff.unit();
  auto panel = [&](const internal::FlameNode& root, bool is_after, std::string caption) {
    internal::FlamePanel p;
    p.caption = std::move(caption);
    p.root = &root;
    p.fill = [largest, is_after](const std::string&, const internal::FlameNode& n) {
      return ChangeColor(is_after ? n.value - n.other : n.other - n.value, largest);
    };
    p.title = [&diff, &unit, is_after](const std::string& name, const internal::FlameNode& n) {
      const double a = is_after ? n.other : n.value, b = is_after ? n.value : n.other;
      const std::string change = a > 0 ? absl::StrFormat(" (%+.1f%%)", 100 * (b - a) / a) : std::string(" (new)");
      return absl::StrFormat("%s: %s %s, %s %s, change %+.4g%s, %s", name, diff.a_name(), Number(a), diff.b_name(),
                             Number(b), b - a, change, unit);
    };
    return p;
  };
  const std::vector<internal::FlamePanel> panels = {
      panel(after, true,
            absl::StrFormat("%s: %s %s in all (widths); colour: change from %s (red grew, blue shrank)",
                            diff.b_name(), Number(diff.b_total()), unit, diff.a_name())),
      panel(before, false,
            absl::StrFormat("%s: %s %s in all (widths); the same colours: what %s lost shows here", diff.a_name(),
                            Number(diff.a_total()), unit, diff.b_name()))};
  return internal::RenderFlameSvg(options.title, panels, options);
}

}  // namespace backendlab::profiling
