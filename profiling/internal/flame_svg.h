// The SVG every flame graph is drawn as, plain or differential: panels of
// frames laid out bottom-up, with an embedded script (no network) for
// search and click-to-zoom. Not for other modules.
#ifndef BACKENDLAB_PROFILING_INTERNAL_FLAME_SVG_H_
#define BACKENDLAB_PROFILING_INTERNAL_FLAME_SVG_H_

#include <functional>
#include <string_view>
#include <string>
#include <vector>

#include "profiling/flame_graph.h"

namespace backendlab::profiling::internal {

// A stack of a picture, its frames root first joined by ';' (a view into
// text the caller keeps), with its value and a second value free for a
// caller's colours (a diff's other side).
struct FlameStack {
  std::string_view stack;
  double value = 0;
  double other = 0;
};

// Sorts stacks frame by frame, each frame by name: the order in which every
// frame node (a distinct path from the root) is a run of consecutive
// stacks, children left to right by name, so that a picture is laid out in
// one pass with no tree. Stacks are distinct (a FoldedStacks' keys).
// `stopped`, if set, is asked between runs of the sort: false once it says
// yes (the order then unfinished).
bool SortFlameStacks(std::vector<FlameStack>& stacks, bool (*stopped)() = nullptr);

// A frame node as laid out: its name, level (0: the root "all"), offset
// and value (the sums of the stacks before it and under it) and other (the
// sum of the stacks' `other` under it), on the side a panel draws.
struct FlameNode {
  std::string_view name;
  int level = 0;
  double offset = 0;
  double value = 0;
  double other = 0;
};

// What a walk of the nodes saw: the most frames of any stack, and whether
// it was stopped.
struct FlameWalk {
  size_t deepest = 0;
  bool stopped = false;
};

// Every node of `stacks` (sorted) to level options.max_depth, its
// descendants before it (post-order), the root last; `swap` exchanges each
// stack's value and other. Deeper frames are not visited (their values are
// their ancestor's at max_depth, as its own). options.stopped, if set, is
// asked at every stack, and the walk ends once it says yes.
FlameWalk ForEachFlameNode(const std::vector<FlameStack>& stacks, bool swap, const FlameGraphOptions& options,
                           const std::function<void(const FlameNode&)>& visit);

// One graph of a picture: its root "all" at the bottom, children left to
// right by name, each node as wide as its value. `fill` gives a node's
// colour, `title` its hover text (plain text; escaped when written).
struct FlamePanel {
  std::string caption;  // above the panel; "" for none
  const std::vector<FlameStack>* stacks = nullptr;  // sorted by SortFlameStacks
  bool swap = false;  // widths from the stacks' other, and other from their value
  std::function<std::string(const FlameNode& node)> fill;
  std::function<std::string(const FlameNode& node)> title;
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
// options.min_width_px, or of no value, are omitted with their descendants;
// a panel is as high as its deepest node drawn. Frames deeper than
// options.max_depth are not drawn, and a line under the panels says so.
// "" once options.stopped says yes. Time grows with the stacks' frames,
// memory with the nodes drawn: no tree is built.
std::string RenderFlameSvg(const std::string& title, const std::vector<FlamePanel>& panels,
                           const FlameGraphOptions& options);

// Flame graphs' warm colours: a hash of the name, the same in every graph.
std::string WarmColorOf(const std::string& name);

}  // namespace backendlab::profiling::internal

#endif  // BACKENDLAB_PROFILING_INTERNAL_FLAME_SVG_H_
