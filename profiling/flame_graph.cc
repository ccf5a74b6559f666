// Flame graph layout and SVG output.
#include "profiling/flame_graph.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/xml_escape.h"

namespace backendlab::profiling {
namespace {

constexpr double kPadX = 10;         // left and right margin
constexpr double kTitleHeight = 40;  // room for the title above the frames
constexpr double kPadBottom = 10;
constexpr int kFontSize = 12;
// Average glyph width of a 12px sans-serif font relative to its size; an
// estimate (no font metrics without a renderer), so labels err short.
constexpr double kCharWidth = 0.59 * kFontSize;

struct Node {
  int64_t count = 0;
  std::map<std::string, Node> children;  // sorted by name: deterministic layout
};

int Depth(const Node& node) {
  int deepest = 0;
  for (const auto& [name, child] : node.children) deepest = std::max(deepest, 1 + Depth(child));
  return deepest;
}

// The first `max_chars` bytes of `text`, not splitting a UTF-8 sequence.
std::string_view Prefix(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return text;
  size_t end = max_chars;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

uint64_t HashName(std::string_view name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across runs and platforms
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// Warm colors, as flame graphs traditionally use.
std::string ColorOf(std::string_view name) {
  uint64_t h = HashName(name);
  int r = 205 + static_cast<int>(h % 51);
  int g = static_cast<int>((h >> 8) % 231);
  int b = static_cast<int>((h >> 16) % 56);
  return absl::StrFormat("rgb(%d,%d,%d)", r, g, b);
}

class Renderer {
 public:
  Renderer(const FlameGraphOptions& options, int64_t total, int depth)
      : options_(options),
        total_(total),
        scale_((options.width - 2 * kPadX) / static_cast<double>(std::max<int64_t>(total, 1))),
        height_(kTitleHeight + (depth + 1) * options.frame_height + kPadBottom) {}

  double height() const { return height_; }

  // Emits `node` at sample offset `offset`, level `level` (0 = root), then its children.
  void Emit(const std::string& name, const Node& node, int64_t offset, int level) {
    double w = node.count * scale_;
    if (w < options_.min_width_px) return;
    double x = kPadX + offset * scale_;
    double y = height_ - kPadBottom - (level + 1) * options_.frame_height;
    double percent = total_ > 0 ? 100.0 * static_cast<double>(node.count) / total_ : 0;
    std::string escaped = EscapeXml(name);
    absl::StrAppend(&out_, "<g>\n<title>",
                    absl::StrFormat("%s (%d samples, %.2f%%)", escaped, node.count, percent),
                    "</title>\n");
    absl::StrAppend(&out_,
                    absl::StrFormat("<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%d\" "
                                    "fill=\"%s\" rx=\"2\" ry=\"2\"/>\n",
                                    x, y, w, options_.frame_height - 1, ColorOf(name)));
    size_t fit = static_cast<size_t>(std::max(0.0, (w - 6) / kCharWidth));
    if (fit >= 3) {
      std::string label = name.size() <= fit ? name : absl::StrCat(std::string(Prefix(name, fit - 2)), "..");
      absl::StrAppend(&out_,
                      absl::StrFormat("<text x=\"%.2f\" y=\"%.2f\">%s</text>\n", x + 3,
                                      y + options_.frame_height - 5, EscapeXml(label)));
    }
    absl::StrAppend(&out_, "</g>\n");
    int64_t child_offset = offset;
    for (const auto& [child_name, child] : node.children) {
      Emit(child_name, child, child_offset, level + 1);
      child_offset += child.count;
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  const FlameGraphOptions& options_;
  int64_t total_;
  double scale_;
  double height_;
  std::string out_;
};

}  // namespace

std::string RenderFlameGraphSvg(const FoldedStacks& stacks, const FlameGraphOptions& options) {
  Node root;
  for (const auto& [stack, count] : stacks.stacks()) {
    root.count += count;
    Node* node = &root;
    for (std::string_view frame : SplitFrames(stack)) {
      node = &node->children[std::string(frame)];
      node->count += count;
    }
  }

  Renderer renderer(options, root.count, Depth(root));
  renderer.Emit("all", root, 0, 0);
  std::string body = renderer.Take();

  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%.0f\" "
      "viewBox=\"0 0 %d %.0f\" font-family=\"Verdana, sans-serif\" font-size=\"%d\">\n"
      "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"rgb(248,248,240)\"/>\n"
      "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">%s</text>\n",
      options.width, renderer.height(), options.width, renderer.height(), kFontSize,
      options.width / 2.0, EscapeXml(options.title));
  absl::StrAppend(&svg, body, "</svg>\n");
  return svg;
}

}  // namespace backendlab::profiling
