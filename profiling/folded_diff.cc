// Two folded profiles in one unit: their stacks side by side, the functions
// that moved most, and the differential flame graph.
#include "profiling/folded_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "profiling/internal/flame_svg.h"

namespace backendlab::profiling {
namespace {

std::string Number(double v) { return absl::StrFormat("%.6g", v); }

// Red for growth, blue for shrinkage, from near white to saturated as the
// change goes from none to the largest of the graph (the most saturated blue
// is kept light enough for black text); a frame that did not change is grey.
std::string ChangeColor(double change, double largest) {
  if (largest <= 0 || std::abs(change) <= largest * 1e-9) return "rgb(220,220,220)";
  const double s = std::min(1.0, std::abs(change) / largest);
  auto fade = [s](int to) { return static_cast<int>(std::lround(235 + (to - 235) * s)); };
  return change > 0 ? absl::StrFormat("rgb(255,%d,%d)", fade(40), fade(40))
                    : absl::StrFormat("rgb(%d,%d,255)", fade(80), fade(130));
}

}  // namespace

FoldedDiff FoldedDiff::Of(const DiffSide& a, const DiffSide& b, std::string unit) {
  return *Of(a, b, std::move(unit), [] { return false; });
}

std::optional<FoldedDiff> FoldedDiff::Of(const DiffSide& a, const DiffSide& b, std::string unit, bool (*stopped)()) {
  FoldedDiff d;
  d.unit_ = std::move(unit);
  d.a_name_ = a.name;
  d.b_name_ = b.name;
  // Both sides are sorted by stack: one merge.
  const std::map<std::string, int64_t>& as = a.stacks->stacks();
  const std::map<std::string, int64_t>& bs = b.stacks->stacks();
  d.stacks_.reserve(std::max(as.size(), bs.size()));
  auto i = as.begin();
  auto j = bs.begin();
  while (i != as.end() || j != bs.end()) {
    if (stopped()) return std::nullopt;
    StackDelta s;
    if (j == bs.end() || (i != as.end() && i->first < j->first)) {
      s.stack = i->first;
      s.a = static_cast<double>((i++)->second) * a.per_sample;
    } else if (i == as.end() || j->first < i->first) {
      s.stack = j->first;
      s.b = static_cast<double>((j++)->second) * b.per_sample;
    } else {
      s.stack = i->first;
      s.a = static_cast<double>((i++)->second) * a.per_sample;
      s.b = static_cast<double>((j++)->second) * b.per_sample;
    }
    d.a_total_ += s.a;
    d.b_total_ += s.b;
    d.stacks_.push_back(std::move(s));
  }
  if (!d.MakeFunctions(stopped)) return std::nullopt;
  return d;
}

void FoldedDiff::WriteText(std::ostream& out) const {
  for (const StackDelta& s : stacks_) out << s.stack << ' ' << Number(s.a) << ' ' << Number(s.b) << '\n';
}

std::string FoldedDiff::ToText() const {
  std::ostringstream text;
  WriteText(text);
  return text.str();
}

bool FoldedDiff::MakeFunctions(bool (*stopped)()) {
  // Each function with the index of the last stack that counted it in its
  // total: a recursive function counts once per stack, found in one lookup
  // per frame (a list of the stack's functions so far made a deep stack's
  // cost grow with the square of its depth).
  struct Counted {
    FunctionDelta f;
    size_t last_stack = SIZE_MAX;
  };
  absl::flat_hash_map<std::string_view, Counted> by_name;
  for (size_t i = 0; i < stacks_.size(); ++i) {
    if (stopped()) return false;
    const StackDelta& s = stacks_[i];
    std::string_view rest = s.stack;
    Counted* leaf = nullptr;
    size_t depth = 0;
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      const std::string_view frame = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      ++depth;
      leaf = &by_name[frame];
      if (leaf->last_stack == i) continue;
      leaf->last_stack = i;
      leaf->f.a_total += s.a;
      leaf->f.b_total += s.b;
    }
    deepest_ = std::max(deepest_, depth);
    if (leaf == nullptr) continue;
    leaf->f.a_self += s.a;
    leaf->f.b_self += s.b;
  }
  functions_.reserve(by_name.size());
  for (auto& [name, counted] : by_name) {
    counted.f.name = std::string(name);
    functions_.push_back(std::move(counted.f));
  }
  std::sort(functions_.begin(), functions_.end(),
            [](const FunctionDelta& x, const FunctionDelta& y) { return x.name < y.name; });
  return true;
}

std::vector<FunctionDelta> FoldedDiff::Grown(size_t n) const {
  std::vector<FunctionDelta> grown;
  for (const FunctionDelta& f : functions_) {
    if (f.self_change() > 0) grown.push_back(f);
  }
  std::sort(grown.begin(), grown.end(), [](const FunctionDelta& x, const FunctionDelta& y) {
    return x.self_change() != y.self_change() ? x.self_change() > y.self_change() : x.name < y.name;
  });
  if (grown.size() > n) grown.resize(n);
  return grown;
}

std::vector<FunctionDelta> FoldedDiff::Shrunk(size_t n) const {
  std::vector<FunctionDelta> shrunk;
  for (const FunctionDelta& f : functions_) {
    if (f.self_change() < 0) shrunk.push_back(f);
  }
  std::sort(shrunk.begin(), shrunk.end(), [](const FunctionDelta& x, const FunctionDelta& y) {
    return x.self_change() != y.self_change() ? x.self_change() < y.self_change() : x.name < y.name;
  });
  if (shrunk.size() > n) shrunk.resize(n);
  return shrunk;
}

std::string RenderDiffFlameGraphSvg(const FoldedDiff& diff, const FlameGraphOptions& options) {
  // One list of stacks for both panels: B's widths above (value b, other
  // a), A's below (swapped); a node's colour comes from the change at its
  // path, the same in both, against the largest change of any frame.
  std::vector<internal::FlameStack> stacks;
  stacks.reserve(diff.stacks().size());
  for (const StackDelta& s : diff.stacks()) stacks.push_back({.stack = s.stack, .value = s.b, .other = s.a});
  if (!internal::SortFlameStacks(stacks, options.stopped)) return "";
  double largest = 0;
  const internal::FlameWalk walk = internal::ForEachFlameNode(stacks, false, options, [&](const internal::FlameNode& n) {
    if (n.level > 0) largest = std::max(largest, std::abs(n.value - n.other));
  });
  if (walk.stopped) return "";
  const std::string& unit = diff.unit();
  auto panel = [&](bool is_after, std::string caption) {
    internal::FlamePanel p;
    p.caption = std::move(caption);
    p.stacks = &stacks;
    p.swap = !is_after;
    p.fill = [largest, is_after](const internal::FlameNode& n) {
      return ChangeColor(is_after ? n.value - n.other : n.other - n.value, largest);
    };
    p.title = [&diff, &unit, is_after](const internal::FlameNode& n) {
      const double a = is_after ? n.other : n.value, b = is_after ? n.value : n.other;
      const std::string change = a > 0 ? absl::StrFormat(" (%+.1f%%)", 100 * (b - a) / a) : std::string(" (new)");
      return absl::StrFormat("%s: %s %s, %s %s, change %+.4g%s, %s", n.name, diff.a_name(), Number(a), diff.b_name(),
                             Number(b), b - a, change, unit);
    };
    return p;
  };
  const std::vector<internal::FlamePanel> panels = {
      panel(true,
            absl::StrFormat("%s: %s %s in all (widths); colour: change from %s (red grew, blue shrank)",
                            diff.b_name(), Number(diff.b_total()), unit, diff.a_name())),
      panel(false,
            absl::StrFormat("%s: %s %s in all (widths); the same colours: what %s lost shows here", diff.a_name(),
                            Number(diff.a_total()), unit, diff.b_name()))};
  return internal::RenderFlameSvg(options.title, panels, options);
}

}  // namespace backendlab::profiling
