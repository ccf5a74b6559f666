// RenderFlameGraphSvg: well-formed XML, one rect per frame node, escaping.
#include "profiling/flame_graph.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace backendlab::profiling {
namespace {

// A small structural XML check: tags balance, attribute values are quoted,
// and '<' / '&' appear in text only as markup or known entities. Returns an
// empty string when well formed, else what is wrong.
std::string CheckXml(std::string_view xml) {
  std::vector<std::string> open;
  size_t i = 0;
  bool seen_root = false;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      size_t semi = xml.find(';', i);
      if (semi == std::string_view::npos) return "unterminated entity";
      std::string entity(xml.substr(i, semi - i + 1));
      static const std::set<std::string> kKnown = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
      if (!kKnown.count(entity)) return "unknown entity " + entity;
      i = semi + 1;
      continue;
    }
    if (xml[i] == '>') return "stray '>' at " + std::to_string(i);
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    if (xml.substr(i, 2) == "<?") {
      size_t end = xml.find("?>", i);
      if (end == std::string_view::npos) return "unterminated <?";
      i = end + 2;
      continue;
    }
    size_t end = i + 1;
    char quote = 0;
    while (end < xml.size() && (quote != 0 || xml[end] != '>')) {
      if (quote == 0 && (xml[end] == '"' || xml[end] == '\'')) {
        quote = xml[end];
      } else if (quote != 0 && xml[end] == quote) {
        quote = 0;
      } else if (xml[end] == '<') {
        return "'<' inside a tag at " + std::to_string(end);
      }
      ++end;
    }
    if (end >= xml.size()) return "unterminated tag";
    std::string_view tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag.front() == '/') {
      std::string name(tag.substr(1));
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
      continue;
    }
    bool self_closing = tag.back() == '/';
    std::string name(tag.substr(0, tag.find_first_of(" \t\n/")));
    if (open.empty()) {
      if (seen_root) return "second root element " + name;
      seen_root = true;
    }
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (!seen_root) return "no root element";
  return "";
}

size_t Count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string_view::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// Frame nodes counted independently of the renderer: distinct stack prefixes.
size_t CountNodes(const FoldedStacks& stacks) {
  std::set<std::string> prefixes;
  for (const auto& [stack, count] : stacks.stacks()) {
    for (size_t pos = 0;; ++pos) {
      pos = stack.find(';', pos);
      prefixes.insert(stack.substr(0, pos));
      if (pos == std::string::npos) break;
    }
  }
  return prefixes.size();
}

TEST(CheckXmlTest, RejectsBrokenDocuments) {
  EXPECT_EQ(CheckXml("<a><b/></a>"), "");
  EXPECT_NE(CheckXml("<a><b></a>"), "");
  EXPECT_NE(CheckXml("<a>x < y</a>"), "");
  EXPECT_NE(CheckXml("<a>&bogus;</a>"), "");
  EXPECT_NE(CheckXml("<a/><b/>"), "");
}

TEST(FlameGraphTest, WellFormedWithOneRectPerNode) {
  absl::StatusOr<FoldedStacks> stacks = FoldedStacks::Parse(
      "main;run;work 50\n"
      "main;run;idle 10\n"
      "main;run 5\n"
      "main;fib;fib;fib 30\n"
      "init;setup 5\n");
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  FlameGraphOptions options;
  options.title = "backendlab <test>";
  std::string svg = RenderFlameGraphSvg(*stacks, options);

  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_EQ(svg.find("href"), std::string::npos) << "must not reference external resources";
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  // Background + "all" + one per frame node.
  ASSERT_EQ(CountNodes(*stacks), 9u);
  EXPECT_EQ(Count(svg, "<rect"), 2 + CountNodes(*stacks));
  EXPECT_EQ(Count(svg, "<g>"), 1 + CountNodes(*stacks));
  EXPECT_NE(svg.find("<title>all (100 samples, 100.00%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>work (50 samples, 50.00%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("backendlab &lt;test&gt;"), std::string::npos);
  // Deterministic: same input, same bytes.
  EXPECT_EQ(RenderFlameGraphSvg(*stacks, options), svg);
}

TEST(FlameGraphTest, OmitsNodesNarrowerThanTheMinimum) {
  absl::StatusOr<FoldedStacks> stacks = FoldedStacks::Parse("big;child 100000\ntiny;deeper 1\n");
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  FlameGraphOptions options;
  options.min_width_px = 1.0;  // tiny is ~0.01px wide
  std::string svg = RenderFlameGraphSvg(*stacks, options);
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_EQ(Count(svg, "<rect"), 2u + 2u);  // background, all, big, child
  EXPECT_EQ(svg.find("tiny"), std::string::npos);
}

TEST(FlameGraphTest, EscapesFrameNames) {
  FoldedStacks stacks;
  stacks.Add(std::vector<std::string>{"main", "operator<<&\"'"}, 3);
  std::string svg = RenderFlameGraphSvg(stacks);
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_NE(svg.find("<title>operator&lt;&lt;&amp;&quot;&apos; (3 samples, 100.00%)</title>"),
            std::string::npos)
      << svg;
  EXPECT_EQ(svg.find("operator<<"), std::string::npos);
  EXPECT_EQ(Count(svg, "<rect"), 2u + 2u);
}

TEST(FlameGraphTest, TruncatesLongLabels) {
  FoldedStacks stacks;
  std::string long_name(500, 'x');
  stacks.Add(std::vector<std::string>{long_name}, 1);
  FlameGraphOptions options;
  options.width = 300;
  std::string svg = RenderFlameGraphSvg(stacks, options);
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_NE(svg.find("xx..</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>" + long_name + " (1 samples"), std::string::npos);
}

TEST(FlameGraphTest, EmptyStacksGiveAnEmptyGraph) {
  std::string svg = RenderFlameGraphSvg(FoldedStacks());
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_EQ(Count(svg, "<rect"), 1u);  // the background; "all" has zero width
}

}  // namespace
}  // namespace backendlab::profiling
