// FoldedDiff on hand-made profiles: the two sides in one unit, every stack
// of either, the functions that grew and shrank by their own values, the
// two-column text, and the differential flame graph's colours and panels.
#include "profiling/folded_diff.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util/xml.h"

namespace backendlab::profiling {
namespace {

using test_util::CheckXml;
using test_util::Count;

FoldedStacks Parse(const char* text) {
  absl::StatusOr<FoldedStacks> s = FoldedStacks::Parse(text);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

// A: 100 connections' worth of samples at 1 ms each; B: 50 connections'.
// Per connection (10 us a sample of A's, 20 of B's): scan 5000 -> 200 us,
// lookup 2000 -> 2000, fork 0 -> 600 (B only), exit 1000 -> 0 (A only).
struct Profiles {
  FoldedStacks a = Parse("backend;main;exit_check;scan 500\nbackend;main;work;lookup 200\nbackend;main;exit 100\n");
  FoldedStacks b = Parse("backend;main;exit_check;scan 10\nbackend;main;work;lookup 100\npostmaster;fork 30\n");
  FoldedDiff diff = FoldedDiff::Of({&a, 10.0, "array"}, {&b, 20.0, "hash"}, "us per connection");
};

TEST(FoldedDiffTest, BothSidesInOneUnitAndEveryStackOfEither) {
  Profiles p;
  const FoldedDiff& d = p.diff;
  EXPECT_DOUBLE_EQ(d.a_total(), 8000);
  EXPECT_DOUBLE_EQ(d.b_total(), 2800);
  ASSERT_EQ(d.stacks().size(), 4u);
  EXPECT_EQ(d.stacks()[0].stack, "backend;main;exit");
  EXPECT_DOUBLE_EQ(d.stacks()[0].a, 1000);
  EXPECT_DOUBLE_EQ(d.stacks()[0].b, 0) << "on A's side only";
  EXPECT_EQ(d.stacks()[3].stack, "postmaster;fork");
  EXPECT_DOUBLE_EQ(d.stacks()[3].a, 0) << "on B's side only";
  EXPECT_DOUBLE_EQ(d.stacks()[3].b, 600);
  EXPECT_EQ(d.ToText(),
            "backend;main;exit 1000 0\n"
            "backend;main;exit_check;scan 5000 200\n"
            "backend;main;work;lookup 2000 2000\n"
            "postmaster;fork 0 600\n");
}

TEST(FoldedDiffTest, GrownAndShrunkAreByTheirOwnValues) {
  Profiles p;
  const std::vector<FunctionDelta> grown = p.diff.Grown(10);
  ASSERT_EQ(grown.size(), 1u) << "lookup's own value did not change; main's is none";
  EXPECT_EQ(grown[0].name, "fork");
  EXPECT_DOUBLE_EQ(grown[0].self_change(), 600);
  const std::vector<FunctionDelta> shrunk = p.diff.Shrunk(10);
  ASSERT_EQ(shrunk.size(), 2u);
  EXPECT_EQ(shrunk[0].name, "scan") << "most first";
  EXPECT_DOUBLE_EQ(shrunk[0].self_change(), -4800);
  EXPECT_EQ(shrunk[1].name, "exit");
  EXPECT_DOUBLE_EQ(shrunk[1].b_total, 0);
  EXPECT_EQ(p.diff.Shrunk(1).size(), 1u);
  // main holds everything of the backend's: its total moves, its self not.
  const FoldedDiff same = FoldedDiff::Of({&p.a, 1.0, "a"}, {&p.a, 1.0, "a again"}, "samples");
  EXPECT_TRUE(same.Grown(10).empty());
  EXPECT_TRUE(same.Shrunk(10).empty());
}

TEST(FoldedDiffTest, TheGraphColoursEachFrameByItsChangeInTwoPanels) {
  Profiles p;
  const std::string svg = RenderDiffFlameGraphSvg(p.diff, {.title = "hash <against> array"});
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_EQ(Count(svg, "<g class=\"panel\""), 2u) << "B's widths above, A's below";
  EXPECT_NE(svg.find("hash &lt;against&gt; array"), std::string::npos);
  // The largest change is the whole backend's (-5800 us): fully blue. fork
  // grew by 600 on B's side only; exit shrank by 1000 on A's only; lookup
  // did not change.
  EXPECT_NE(svg.find("<title>fork: array 0, hash 600, change +600 (new), us per connection</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>exit: array 1000, hash 0, change -1000 (-100.0%), us per connection</title>"),
            std::string::npos);
  EXPECT_NE(svg.find("<title>backend: array 8000, hash 2200, change -5800 (-72.5%), us per connection</title>"),
            std::string::npos);
  auto fill_of = [&](const std::string& name) {
    const size_t g = svg.find("data-n=\"" + name + "\"");
    const size_t fill = svg.find("fill=\"", g);
    return svg.substr(fill + 6, svg.find('"', fill + 6) - fill - 6);
  };
  EXPECT_EQ(fill_of("backend"), "rgb(80,130,255)") << "the largest change: saturated blue";
  EXPECT_EQ(fill_of("lookup"), "rgb(220,220,220)");
  EXPECT_EQ(fill_of("fork").substr(0, 8), "rgb(255,") << "grew: red";
  EXPECT_EQ(fill_of("exit").substr(0, 4), "rgb(") << "drawn, in A's panel";
  EXPECT_EQ(fill_of("exit").substr(fill_of("exit").size() - 5), ",255)") << "shrank: blue";
  EXPECT_EQ(Count(svg, "data-n=\"fork\""), 1u) << "on B's side only: only in B's panel";
  EXPECT_EQ(Count(svg, "data-n=\"exit\""), 1u) << "on A's side only: only in A's panel";
  EXPECT_EQ(Count(svg, "data-n=\"lookup\""), 2u);
}

TEST(FoldedDiffTest, EmptyProfilesGiveEmptyButValidFiles) {
  const FoldedStacks none;
  const FoldedDiff d = FoldedDiff::Of({&none, 1, "a"}, {&none, 1, "b"}, "samples");
  EXPECT_EQ(d.ToText(), "");
  EXPECT_TRUE(d.Grown(10).empty());
  const std::string svg = RenderDiffFlameGraphSvg(d);
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_EQ(Count(svg, "<g class=\"f\""), 0u);
}

// A stack `depth` frames deep: f0;f1;...
std::string Deep(int depth) {
  std::string stack;
  for (int i = 0; i < depth; ++i) stack += (i ? ";f" : "f") + std::to_string(i);
  return stack;
}

// Probe defect 1 (2026-12-05): a function's total was counted once per
// stack by a search of the stack's functions so far, so a deep stack cost
// the square of its depth. Recursion still counts once; the depth is known;
// the graph is drawn to options.max_depth and says where it is cut.
TEST(FoldedDiffTest, DeepStacksCountEachFunctionOnceAndTheGraphIsCutWhereItSays) {
  const FoldedStacks a = Parse((Deep(3000) + " 4\nmain;fib;fib;fib;fib 6\n").c_str());
  const FoldedStacks b = Parse((Deep(3000) + " 2\n").c_str());
  const FoldedDiff d = FoldedDiff::Of({&a, 1, "a"}, {&b, 1, "b"}, "samples");
  EXPECT_EQ(d.deepest(), 3000u);
  const std::vector<FunctionDelta> shrunk = d.Shrunk(10);
  ASSERT_EQ(shrunk.size(), 2u);
  EXPECT_EQ(shrunk[0].name, "fib");
  EXPECT_DOUBLE_EQ(shrunk[0].a_total, 6) << "once per stack, however deep the recursion";
  EXPECT_EQ(shrunk[1].name, "f2999");
  const std::string svg = RenderDiffFlameGraphSvg(d, {.max_depth = 100});
  EXPECT_EQ(CheckXml(svg), "") << svg.substr(0, 2000);
  EXPECT_EQ(Count(svg, "data-l=\"100\""), 2u) << "f99, in each panel";
  EXPECT_EQ(Count(svg, "data-l=\"101\""), 0u);
  EXPECT_EQ(Count(svg, "Frames deeper than 100 are not drawn: the deepest stack has 3000."), 1u);
  EXPECT_EQ(Count(RenderDiffFlameGraphSvg(d), "are not drawn"), 1u) << "cut at the default depth too";
  EXPECT_EQ(Count(RenderDiffFlameGraphSvg(Profiles().diff), "are not drawn"), 0u);
}

// A stop request ends the diff and its drawing where they are: nullopt, "".
TEST(FoldedDiffTest, AStopEndsTheDiffAndItsGraph) {
  Profiles p;
  static int asked = 0;
  auto after_two = [] { return ++asked > 2; };
  EXPECT_FALSE(FoldedDiff::Of({&p.a, 1, "a"}, {&p.b, 1, "b"}, "samples", after_two).has_value());
  EXPECT_GT(asked, 2);
  asked = 0;
  EXPECT_EQ(RenderDiffFlameGraphSvg(p.diff, {.stopped = after_two}), "");
  const std::optional<FoldedDiff> whole = FoldedDiff::Of({&p.a, 10.0, "array"}, {&p.b, 20.0, "hash"},
                                                          "us per connection", [] { return false; });
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->ToText(), p.diff.ToText());
  EXPECT_EQ(RenderDiffFlameGraphSvg(*whole, {.stopped = [] { return false; }}), RenderDiffFlameGraphSvg(p.diff));
}

}  // namespace
}  // namespace backendlab::profiling
