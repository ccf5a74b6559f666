// RenderFlameGraphSvg: well-formed XML, one rect per frame node, escaping,
// and the data its search and zoom script reads.
#include "profiling/flame_graph.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util/xml.h"

namespace backendlab::profiling {
namespace {

using test_util::CheckXml;
using test_util::Count;

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
  EXPECT_EQ(CheckXml("<a><![CDATA[ x < y && z ]]></a>"), "") << "a script's CDATA is taken whole";
  EXPECT_NE(CheckXml("<a><![CDATA[ x < y </a>"), "");
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
  // One script of its own (search and zoom), nothing fetched or linked.
  EXPECT_EQ(Count(svg, "<script"), 1u);
  for (const char* external : {"href", "src=", "url(", "fetch(", "XMLHttpRequest", "import "}) {
    EXPECT_EQ(svg.find(external), std::string::npos) << "must not reference external resources: " << external;
  }
  // Background + "all" + one per frame node.
  ASSERT_EQ(CountNodes(*stacks), 9u);
  EXPECT_EQ(Count(svg, "<rect"), 2 + CountNodes(*stacks));
  EXPECT_EQ(Count(svg, "<g class=\"f\""), 1 + CountNodes(*stacks));
  EXPECT_NE(svg.find("<title>all (100 samples, 100.00%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>work (50 samples, 50.00%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("backendlab &lt;test&gt;"), std::string::npos);
  // Deterministic: same input, same bytes.
  EXPECT_EQ(RenderFlameGraphSvg(*stacks, options), svg);
}

// What the script reads: every frame's name, place and level as drawn, and
// each panel's full width; a label that does not fit is an empty <text>.
TEST(FlameGraphTest, FramesCarryWhatSearchAndZoomRead) {
  absl::StatusOr<FoldedStacks> stacks = FoldedStacks::Parse("main;work 3\nmain;idle 1\n");
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  FlameGraphOptions options;
  options.width = 420;  // 400 px of frames between 10 px margins
  const std::string svg = RenderFlameGraphSvg(*stacks, options);
  EXPECT_NE(svg.find("<g class=\"panel\" data-x0=\"10.00\" data-w=\"400.00\">"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<g class=\"f\" data-n=\"all\" data-x=\"10.00\" data-w=\"400.00\" data-l=\"0\">"), std::string::npos);
  EXPECT_NE(svg.find("<g class=\"f\" data-n=\"work\" data-x=\"110.00\" data-w=\"300.00\" data-l=\"2\">"),
            std::string::npos)
      << "children left to right by name: idle (100 px), then work";
  EXPECT_NE(svg.find("class=\"control search\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"control unzoom\""), std::string::npos);
  EXPECT_NE(svg.find("svg.flameSearch = search"), std::string::npos);
  EXPECT_EQ(Count(svg, "</text>\n</g>"), 4u) << "a label per frame (all, main, idle, work)";
}

// Folded stacks are kept sorted as text, where "Foo::Bar" and "Foo1" come
// before "Foo;x" (':' and '1' are below ';'); a frame's stacks must still
// make one node, laid out frame by frame: Foo (its children x and y from
// its left, its own 3 samples to their right), then Foo1, then Foo::Bar,
// by name, each once.
TEST(FlameGraphTest, AFramesStacksMakeOneNodeWhateverTheirOrderAsText) {
  absl::StatusOr<FoldedStacks> stacks = FoldedStacks::Parse(
      "main;Foo 1\n"
      "main;Foo::Bar 2\n"
      "main;Foo1 1\n"
      "main;Foo;x 1\n"
      "main;Foo;y 1\n"
      "main;Foo 2\n");
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  FlameGraphOptions options;
  options.width = 420;  // 400 px for 8 samples: 50 px each
  const std::string svg = RenderFlameGraphSvg(*stacks, options);
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_EQ(Count(svg, "data-n=\"Foo\""), 1u) << svg;
  EXPECT_NE(svg.find("<g class=\"f\" data-n=\"Foo\" data-x=\"10.00\" data-w=\"250.00\" data-l=\"2\">"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<g class=\"f\" data-n=\"x\" data-x=\"10.00\" data-w=\"50.00\" data-l=\"3\">"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<g class=\"f\" data-n=\"y\" data-x=\"60.00\" data-w=\"50.00\" data-l=\"3\">"),
            std::string::npos)
      << svg;
  // By name: "Foo" < "Foo1" < "Foo::Bar" ('1' is below ':').
  EXPECT_NE(svg.find("<g class=\"f\" data-n=\"Foo1\" data-x=\"260.00\" data-w=\"50.00\" data-l=\"2\">"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<g class=\"f\" data-n=\"Foo::Bar\" data-x=\"310.00\" data-w=\"100.00\" data-l=\"2\">"),
            std::string::npos)
      << svg;
  EXPECT_EQ(Count(svg, "<rect"), 2u + CountNodes(*stacks)) << "the background, all, and each node once";
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

// A stack deeper than options.max_depth is drawn to that depth (its deeper
// frames' samples in the frame there), and a line under the graph says so.
TEST(FlameGraphTest, FramesDeeperThanTheMaxDepthAreNotDrawnAndALineSaysSo) {
  absl::StatusOr<FoldedStacks> stacks = FoldedStacks::Parse("a;b;c;d;e;f 3\na;b;c;x 1\na;y 2\n");
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  FlameGraphOptions options;
  options.max_depth = 3;
  const std::string svg = RenderFlameGraphSvg(*stacks, options);
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_EQ(Count(svg, "<g class=\"f\""), 5u) << "all, a, b, c and y: " << svg;
  EXPECT_NE(svg.find("<title>c (4 samples, 66.67%)</title>"), std::string::npos) << "d, e, f and x are c's";
  EXPECT_EQ(svg.find("data-n=\"d\""), std::string::npos);
  EXPECT_EQ(svg.find("data-n=\"x\""), std::string::npos);
  EXPECT_NE(svg.find(">Frames deeper than 3 are not drawn: the deepest stack has 6.</text>"), std::string::npos);
  options.max_depth = 6;
  const std::string whole = RenderFlameGraphSvg(*stacks, options);
  EXPECT_EQ(Count(whole, "<g class=\"f\""), 9u);
  EXPECT_EQ(whole.find("are not drawn"), std::string::npos);
}

TEST(FlameGraphTest, AStopEndsTheDrawingWithNothing) {
  absl::StatusOr<FoldedStacks> stacks = FoldedStacks::Parse("a;b 1\na;c 1\n");
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  EXPECT_EQ(RenderFlameGraphSvg(*stacks, {.stopped = [] { return true; }}), "");
  EXPECT_EQ(RenderFlameGraphSvg(*stacks, {.stopped = [] { return false; }}), RenderFlameGraphSvg(*stacks));
}

// More stacks than one run of the sort (which sorts in runs and merges
// them, to hear a stop between): each node still drawn once. Text order
// ("a10;" before "a1;") is not frame order, so the sort has work to do.
TEST(FlameGraphTest, ManyStacksSortedInRunsStillMakeOneNodeEach) {
  FoldedStacks stacks;
  for (int i = 0; i < 40'000; ++i) {
    stacks.Add(std::vector<std::string>{"a" + std::to_string(i % 11), "b" + std::to_string(i % 101),
                                        "c" + std::to_string(i)},
               1 + i % 3);
  }
  FlameGraphOptions options;
  options.min_width_px = 0;
  const std::string svg = RenderFlameGraphSvg(stacks, options);
  EXPECT_EQ(Count(svg, "<g class=\"f\""), 1 + CountNodes(stacks));
}

}  // namespace
}  // namespace backendlab::profiling
