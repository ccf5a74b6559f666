// Flame graphs of folded stacks: a profile's stacks, sorted and laid out by
// internal/flame_svg.
#include "profiling/flame_graph.h"

#include "absl/strings/str_format.h"
#include "profiling/internal/flame_svg.h"

namespace backendlab::profiling {

std::string RenderFlameGraphSvg(const FoldedStacks& stacks, const FlameGraphOptions& options) {
  std::vector<internal::FlameStack> sorted;
  sorted.reserve(stacks.stacks().size());
  double total = 0;
  for (const auto& [stack, count] : stacks.stacks()) {
    sorted.push_back({.stack = stack, .value = static_cast<double>(count)});
    total += static_cast<double>(count);
  }
  if (!internal::SortFlameStacks(sorted, options.stopped)) return "";
  internal::FlamePanel panel;
  panel.stacks = &sorted;
  panel.fill = [](const internal::FlameNode& node) { return internal::WarmColorOf(std::string(node.name)); };
  panel.title = [total](const internal::FlameNode& node) {
    return absl::StrFormat("%s (%.0f samples, %.2f%%)", node.name, node.value, total > 0 ? 100 * node.value / total : 0.0);
  };
  return internal::RenderFlameSvg(options.title, {panel}, options);
}

}  // namespace backendlab::profiling
