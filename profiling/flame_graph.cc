// Flame graphs of folded stacks: the tree of a profile's stacks, drawn by
// internal/flame_svg.
#include "profiling/flame_graph.h"

#include "absl/strings/str_format.h"
#include "profiling/internal/flame_svg.h"

namespace backendlab::profiling {

std::string RenderFlameGraphSvg(const FoldedStacks& stacks, const FlameGraphOptions& options) {
  internal::FlameNode root;
  for (const auto& [stack, count] : stacks.stacks()) {
    const double n = static_cast<double>(count);
    root.value += n;
    internal::FlameNode* node = &root;
    for (std::string_view frame : SplitFrames(stack)) {
      node = &node->children[std::string(frame)];
      node->value += n;
    }
  }
  const double total = root.value;
  internal::FlamePanel panel;
  panel.root = &root;
  panel.fill = [](const std::string& name, const internal::FlameNode&) { return internal::WarmColorOf(name); };
  panel.title = [total](const std::string& name, const internal::FlameNode& node) {
    return absl::StrFormat("%s (%.0f samples, %.2f%%)", name, node.value, total > 0 ? 100 * node.value / total : 0.0);
  };
  return internal::RenderFlameSvg(options.title, {panel}, options);
}

}  // namespace backendlab::profiling
