// Flame graph panels as SVG, with the script for search and zoom.
#include "profiling/internal/flame_svg.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/xml_escape.h"

namespace backendlab::profiling::internal {
namespace {

constexpr double kPadX = 10;         // left and right margin
constexpr double kTitleHeight = 40;  // room for the title and the controls above the frames
constexpr double kCaptionHeight = 22;
constexpr double kPadBottom = 24;    // room for "Matched: P%"
constexpr int kFontSize = 12;
// Average glyph width of a 12px sans-serif font relative to its size; an
// estimate (no font metrics without a renderer), so labels err short. The
// script uses the same.
constexpr double kCharWidth = 0.59 * kFontSize;

// Search and zoom, bound to the <svg> that holds the script. No network,
// no library. In a CDATA section, so that it reads the same as an SVG file
// and inline in an HTML page.
constexpr char kScript[] = R"JS(
(function (svg) {
  'use strict';
  var CW = %CW%, HIGHLIGHT = 'rgb(230,0,230)';
  function num(g, k) { return parseFloat(g.getAttribute(k)); }
  function frames(root) { return Array.prototype.slice.call(root.querySelectorAll('g.f')); }
  function label(g, w) {
    var name = g.getAttribute('data-n'), fit = Math.floor((w - 6) / CW), t = g.querySelector('text');
    if (fit < 3) { t.textContent = ''; return; }
    t.textContent = name.length <= fit ? name : name.substring(0, fit - 2) + '..';
  }
  function place(g, x, w, shown) {
    g.style.display = shown ? '' : 'none';
    if (!shown) return;
    var r = g.querySelector('rect'), t = g.querySelector('text');
    r.setAttribute('x', x.toFixed(2));
    r.setAttribute('width', Math.max(w, 0).toFixed(2));
    t.setAttribute('x', (x + 3).toFixed(2));
    label(g, w);
  }
  function reset() {
    frames(svg).forEach(function (g) { place(g, num(g, 'data-x'), num(g, 'data-w'), true); });
    svg.querySelector('.unzoom').style.display = 'none';
  }
  function zoom(g) {
    var p = g.closest('g.panel'), x0 = num(p, 'data-x0'), W = num(p, 'data-w');
    var fx = num(g, 'data-x'), fw = num(g, 'data-w'), fl = num(g, 'data-l'), eps = 1e-6, k = W / fw;
    frames(p).forEach(function (h) {
      var hx = num(h, 'data-x'), hw = num(h, 'data-w'), hl = num(h, 'data-l');
      var inside = hx >= fx - eps && hx + hw <= fx + fw + eps;
      var covers = hx <= fx + eps && hx + hw >= fx + fw - eps;
      if (hl >= fl && inside) place(h, x0 + (hx - fx) * k, hw * k, true);
      else if (hl < fl && covers) place(h, x0, W, true);
      else place(h, 0, 0, false);
    });
    svg.querySelector('.unzoom').style.display = '';
  }
  function search(term) {
    var re;
    try { re = new RegExp(term); } catch (e) { re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')); }
    var matched = [];
    frames(svg).forEach(function (g) {
      var r = g.querySelector('rect');
      if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));
      var hit = re.test(g.getAttribute('data-n'));
      r.setAttribute('fill', hit ? HIGHLIGHT : r.getAttribute('data-fill'));
      if (hit) matched.push(g);
    });
    // The share of the first panel's width under a match, overlaps merged:
    // the share of its samples with a matching frame on their stack.
    var p = svg.querySelector('g.panel'), spans = [];
    matched.forEach(function (g) {
      if (g.closest('g.panel') === p) spans.push([num(g, 'data-x'), num(g, 'data-x') + num(g, 'data-w')]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] > end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    var share = p ? 100 * covered / num(p, 'data-w') : 0;
    svg.querySelector('.matched').textContent = matched.length ? 'Matched: ' + share.toFixed(1) + '%' : '';
    svg.setAttribute('data-matched', String(matched.length));
    return matched.length;
  }
  function clear() {
    frames(svg).forEach(function (g) {
      var r = g.querySelector('rect');
      if (r.hasAttribute('data-fill')) r.setAttribute('fill', r.getAttribute('data-fill'));
    });
    svg.querySelector('.matched').textContent = '';
    svg.setAttribute('data-matched', '0');
  }
  svg.flameSearch = search;
  svg.flameClear = clear;
  svg.flameReset = reset;
  svg.flameZoom = zoom;
  frames(svg).forEach(function (g) { g.addEventListener('click', function () { zoom(g); }); });
  svg.querySelector('.unzoom').addEventListener('click', reset);
  svg.querySelector('.search').addEventListener('click', function () {
    var term = window.prompt('Search frames (a regular expression):', '');
    if (term) search(term); else clear();
  });
})(document.currentScript ? document.currentScript.parentNode : document.documentElement);
)JS";

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

// The frame groups of one panel, each a <g class="f">, in post-order.
bool EmitPanel(const FlamePanel& panel, const FlameGraphOptions& options, double scale, double bottom,
               std::string& out) {
  return !ForEachFlameNode(*panel.stacks, panel.swap, options, [&](const FlameNode& node) {
    const double w = node.value * scale;
    if (w < options.min_width_px || node.value <= 0) return;
    const double x = kPadX + node.offset * scale;
    const double y = bottom - (node.level + 1) * options.frame_height;
    const std::string name(node.name);
    const std::string escaped = EscapeXml(name);
    absl::StrAppend(&out,
                    absl::StrFormat("<g class=\"f\" data-n=\"%s\" data-x=\"%.2f\" data-w=\"%.2f\" data-l=\"%d\">\n",
                                    escaped, x, w, node.level),
                    "<title>", EscapeXml(panel.title(node)), "</title>\n",
                    absl::StrFormat("<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\" "
                                    "ry=\"2\"/>\n",
                                    x, y, w, options.frame_height - 1, panel.fill(node)));
    const size_t fit = static_cast<size_t>(std::max(0.0, (w - 6) / kCharWidth));
    std::string label;
    if (fit >= 3) label = name.size() <= fit ? name : absl::StrCat(std::string(Prefix(name, fit - 2)), "..");
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.2f\" y=\"%.2f\">%s</text>\n</g>\n", x + 3,
                                          y + options.frame_height - 5, EscapeXml(label)));
  }).stopped;
}

}  // namespace

namespace {

// Frame by frame, as text, a node's children before its own stack (as
// FlameGraph draws them: children from the left, the node's self time to
// their right). At the first byte where the two differ, a frame that ends
// there (';') comes first, then the end of a stack (the node itself), then
// the smaller byte. Words of 8 bytes at a time find that byte.
bool FrameLess(std::string_view x, std::string_view y) {
  const size_t n = std::min(x.size(), y.size());
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t a, b;
    std::memcpy(&a, x.data() + i, 8);
    std::memcpy(&b, y.data() + i, 8);
    if (a != b) {
      i += static_cast<size_t>(std::countr_zero(a ^ b)) / 8;  // little-endian: the lowest byte comes first
      break;
    }
  }
  while (i < n && x[i] == y[i]) ++i;
  if (i == n) {
    if (x.size() == y.size()) return false;
    return x.size() < y.size() ? y[i] != ';' : x[i] == ';';
  }
  if (x[i] == ';') return true;
  if (y[i] == ';') return false;
  return static_cast<unsigned char>(x[i]) < static_cast<unsigned char>(y[i]);
}

}  // namespace

bool SortFlameStacks(std::vector<FlameStack>& stacks, bool (*stopped)()) {
  auto by_frames = [](const FlameStack& x, const FlameStack& y) { return FrameLess(x.stack, y.stack); };
  // Runs of kRun sorted, then merged in pairs, with `stopped` asked between
  // them: a stop is heard within one run's sort or one merge, not only
  // after the whole sort of millions of stacks.
  constexpr size_t kRun = size_t{1} << 14;
  const auto at = [&](size_t i) { return stacks.begin() + static_cast<std::ptrdiff_t>(std::min(i, stacks.size())); };
  for (size_t i = 0; i < stacks.size(); i += kRun) {
    if (stopped != nullptr && stopped()) return false;
    std::sort(at(i), at(i + kRun), by_frames);
  }
  for (size_t width = kRun; width < stacks.size(); width *= 2) {
    for (size_t i = 0; i + width < stacks.size(); i += 2 * width) {
      if (stopped != nullptr && stopped()) return false;
      std::inplace_merge(at(i), at(i + width), at(i + 2 * width), by_frames);
    }
  }
  return true;
}

FlameWalk ForEachFlameNode(const std::vector<FlameStack>& stacks, bool swap, const FlameGraphOptions& options,
                           const std::function<void(const FlameNode&)>& visit) {
  // The open path, root first: the nodes of the stack before, each closed
  // (visited) once a stack leaves it. In SortFlameStacks' order a node's
  // stacks are consecutive, so its offset is the value of the stacks
  // before its first one; so are those of a node at max_depth, whatever
  // their frames beyond it.
  const size_t max_depth = static_cast<size_t>(std::max(options.max_depth, 1));
  FlameWalk walk;
  std::vector<FlameNode> path = {{.name = "all"}};
  double before = 0;
  for (const FlameStack& s : stacks) {
    if (options.stopped != nullptr && options.stopped()) {
      walk.stopped = true;
      return walk;
    }
    // The frames this stack shares with the open path stay open; the path
    // beyond them closes; the stack's own frames open.
    size_t shared = 0;
    bool diverged = false;
    auto close_beyond_shared = [&] {
      while (path.size() > shared + 1) {
        visit(path.back());
        path.pop_back();
      }
    };
    std::string_view rest = s.stack;
    size_t depth = 0;
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      const std::string_view frame = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      if (++depth > max_depth) {
        depth += rest.empty() ? 0 : static_cast<size_t>(std::count(rest.begin(), rest.end(), ';')) + 1;
        break;
      }
      if (!diverged && shared + 1 < path.size() && path[shared + 1].name == frame) {
        ++shared;
        continue;
      }
      if (!diverged) close_beyond_shared();
      diverged = true;
      path.push_back({.name = frame, .level = static_cast<int>(path.size()), .offset = before});
    }
    if (!diverged) close_beyond_shared();
    walk.deepest = std::max(walk.deepest, depth);
    const double value = swap ? s.other : s.value, other = swap ? s.value : s.other;
    for (FlameNode& n : path) {
      n.value += value;
      n.other += other;
    }
    before += value;
  }
  while (!path.empty()) {
    visit(path.back());
    path.pop_back();
  }
  return walk;
}

std::string WarmColorOf(const std::string& name) {
  const uint64_t h = HashName(name);
  const int r = 205 + static_cast<int>(h % 51);
  const int g = static_cast<int>((h >> 8) % 231);
  const int b = static_cast<int>((h >> 16) % 56);
  return absl::StrFormat("rgb(%d,%d,%d)", r, g, b);
}

std::string RenderFlameSvg(const std::string& title, const std::vector<FlamePanel>& panels,
                           const FlameGraphOptions& options) {
  // Each panel's scale (its root's value across the width) and depth (its
  // deepest node drawn), then its frames.
  struct Layout {
    double scale = 0;
    int depth = 0;
  };
  std::vector<Layout> layouts;
  double height = kTitleHeight;
  size_t deepest = 0;
  for (const FlamePanel& p : panels) {
    double total = 0;
    for (const FlameStack& s : *p.stacks) total += p.swap ? s.other : s.value;
    Layout l{.scale = (options.width - 2 * kPadX) / std::max(total, 1e-300)};
    const FlameWalk walk = ForEachFlameNode(*p.stacks, p.swap, options, [&](const FlameNode& n) {
      if (n.value > 0 && n.value * l.scale >= options.min_width_px) l.depth = std::max(l.depth, n.level);
    });
    if (walk.stopped) return "";
    deepest = std::max(deepest, walk.deepest);
    layouts.push_back(l);
    height += (p.caption.empty() ? 0 : kCaptionHeight) + (l.depth + 1) * options.frame_height;
  }
  const bool cut = deepest > static_cast<size_t>(options.max_depth);
  height += kPadBottom + (cut ? kCaptionHeight : 0);
  std::string body;
  double top = kTitleHeight;
  for (size_t i = 0; i < panels.size(); ++i) {
    const FlamePanel& p = panels[i];
    if (!p.caption.empty()) {
      absl::StrAppend(&body, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\">%s</text>\n", kPadX,
                                             top + kCaptionHeight - 7, EscapeXml(p.caption)));
      top += kCaptionHeight;
    }
    const double panel_height = (layouts[i].depth + 1) * options.frame_height;
    absl::StrAppend(&body, absl::StrFormat("<g class=\"panel\" data-x0=\"%.2f\" data-w=\"%.2f\">\n", kPadX,
                                           options.width - 2 * kPadX));
    if (!EmitPanel(p, options, layouts[i].scale, top + panel_height, body)) return "";
    absl::StrAppend(&body, "</g>\n");
    top += panel_height;
  }
  if (cut) {
    absl::StrAppend(&body, absl::StrFormat("<text class=\"cut\" x=\"%.1f\" y=\"%.1f\" font-size=\"13\">Frames deeper "
                                           "than %d are not drawn: the deepest stack has %d.</text>\n",
                                           kPadX, top + kCaptionHeight - 7, options.max_depth, deepest));
  }
  std::string script = kScript;
  const std::string cw = absl::StrFormat("%.4f", kCharWidth);
  script.replace(script.find("%CW%"), 4, cw);
  return absl::StrCat(
      absl::StrFormat("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"flame\" width=\"%d\" "
                      "height=\"%.0f\" viewBox=\"0 0 %d %.0f\" font-family=\"Verdana, sans-serif\" font-size=\"%d\">\n"
                      "<style>g.f { cursor: pointer; } g.f:hover rect { stroke: black; stroke-width: 0.5; } "
                      ".control { cursor: pointer; fill: rgb(60,60,160); }</style>\n"
                      "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"rgb(248,248,240)\"/>\n"
                      "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">%s</text>\n"
                      "<text class=\"control unzoom\" x=\"%.1f\" y=\"24\" style=\"display:none\">Reset Zoom</text>\n"
                      "<text class=\"control search\" x=\"%.1f\" y=\"24\" text-anchor=\"end\">Search</text>\n"
                      "<text class=\"matched\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"end\"></text>\n",
                      options.width, height, options.width, height, kFontSize, options.width / 2.0,
                      EscapeXml(title), kPadX, options.width - kPadX, options.width - kPadX, height - 8),
      body, "<script><![CDATA[", script, "]]></script>\n</svg>\n");
}

}  // namespace backendlab::profiling::internal
