// Flame graphs of folded stacks as self-contained SVG.
#ifndef BACKENDLAB_PROFILING_FLAME_GRAPH_H_
#define BACKENDLAB_PROFILING_FLAME_GRAPH_H_

#include <string>

#include "profiling/folded_stacks.h"

namespace backendlab::profiling {

struct FlameGraphOptions {
  std::string title = "Flame Graph";
  int width = 1200;          // pixels
  int frame_height = 16;     // pixels per stack level
  double min_width_px = 0.1; // narrower nodes (and so their children) are omitted
  // Deeper frames (the root "all" is level 0) are not drawn, and a line says
  // so: a stack a million frames deep would make a picture 16 million pixels
  // high and gigabytes to write, of no use to a reader (profilers record
  // 64 to 127 frames).
  int max_depth = 1024;
  // Asked as the graph is drawn (a command's stop request,
  // base/interrupt.h): once it says yes, drawing ends and "" is returned.
  bool (*stopped)() = nullptr;
};

// An SVG with no external resource (no link, font or network; one script
// of its own, for search and click-to-zoom, as FlameGraph's have). Layout:
//   - one background <rect> covering the whole image, first;
//   - one <rect> for the root "all" (every sample);
//   - one <rect> per frame node, a node being a distinct path from the root,
//     i.e. a distinct prefix of some stack; its width is proportional to the
//     samples whose stack begins with that path. Children are placed left to
//     right sorted by name; the root is at the bottom.
// Nodes narrower than `min_width_px` are omitted together with their
// descendants, so the rect count is 2 + nodes only when none is that narrow.
// Each node is a <g class="f"> holding a <title> "function (N samples, P%)"
// for hover, its <rect> and a <text> label truncated with ".." to the rect
// (empty when not three characters fit). Colors are a hash of the function
// name, so the same function has the same color in every graph. All text is
// XML-escaped. The script (internal/flame_svg.h): click a frame to zoom to
// it, "Reset Zoom" to go back, "Search" for a regular expression, whose
// matching frames turn magenta with the share of samples they cover.
// Frames deeper than options.max_depth are not drawn; a line under the graph
// says so. "" once options.stopped says yes.
std::string RenderFlameGraphSvg(const FoldedStacks& stacks,
                                const FlameGraphOptions& options = {});

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_FLAME_GRAPH_H_
