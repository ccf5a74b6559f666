// The SVG every flame graph is drawn as, plain or differential: panels of
// frames laid out bottom-up, with an embedded script (no network) for
// search and click-to-zoom. Not for other modules.
#ifndef BACKENDLAB_PROFILING_INTERNAL_FLAME_SVG_H_
#define BACKENDLAB_PROFILING_INTERNAL_FLAME_SVG_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "profiling/flame_graph.h"

namespace backendlab::profiling::internal {

// A frame node: a distinct path from the root. `value` sets its width;
// `other` is free for a caller's colours (a diff's other side).
struct FlameNode {
  double value = 0;
  double other = 0;
  std::map<std::string, FlameNode> children;  // sorted by name: a deterministic layout
};

// One graph of a picture: its root "all" at the bottom, children left to
// right by name, each node as wide as its value. `fill` gives a node's
// colour, `title` its hover text (plain text; escaped when written).
struct FlamePanel {
  std::string caption;  // above the panel; "" for none
  const FlameNode* root = nullptr;
  std::function<std::string(const std::string& name, const FlameNode& node)> fill;
  std::function<std::string(const std::string& name, const FlameNode& node)> title;
};

// The whole SVG: a background rect, the title, a Search and a Reset Zoom
// control, the panels one above the other, and the script. Each frame is
// a <g class="f"> with data-n (its name), data-x, data-w and data-l (its
// place and level as drawn), its <title>, <rect> and <text> (the label,
// empty where it does not fit); each panel a <g class="panel"> with data-x0
// and data-w (its full width). The script, bound to its own <svg> (several
// may share an HTML page), sets svg.flameSearch(regexp) (frames whose name
// matches turn magenta; "Matched: P%" gives the share of the panel's width
// under a match), svg.flameReset() and svg.flameZoom(g) (a clicked frame
// fills its panel's width, its descendants scaled with it, its ancestors
// shown whole, the rest hidden). Nodes narrower than
// options.min_width_px are omitted with their descendants.
std::string RenderFlameSvg(const std::string& title, const std::vector<FlamePanel>& panels,
                           const FlameGraphOptions& options);

// Flame graphs' warm colours: a hash of the name, the same in every graph.
std::string WarmColorOf(const std::string& name);

}  // namespace backendlab::profiling::internal

#endif  // BACKENDLAB_PROFILING_INTERNAL_FLAME_SVG_H_
