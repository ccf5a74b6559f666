// FoldedStacks: the folded text format both ways, and per-function totals.
#include "profiling/folded_stacks.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace backendlab::profiling {
namespace {

TEST(FoldedStacksTest, RoundTripsThroughText) {
  FoldedStacks stacks;
  stacks.Add(std::vector<std::string>{"main", "run", "work"}, 5);
  stacks.Add(std::vector<std::string>{"main", "run"}, 2);
  stacks.Add(std::vector<std::string>{"main", "std::vector<int, std::allocator<int> >::push_back"}, 1);
  stacks.Add(std::vector<std::string>{"main", "run", "work"}, 3);  // summed with the first
  EXPECT_EQ(stacks.total_samples(), 11);
  EXPECT_EQ(stacks.ToText(),
            "main;run 2\n"
            "main;run;work 8\n"
            "main;std::vector<int, std::allocator<int> >::push_back 1\n");

  absl::StatusOr<FoldedStacks> parsed = FoldedStacks::Parse(stacks.ToText());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, stacks);
  EXPECT_EQ(parsed->total_samples(), 11);
  EXPECT_EQ(parsed->ToText(), stacks.ToText());
}

TEST(FoldedStacksTest, ParseSkipsBlankLinesAndSumsRepeats) {
  absl::StatusOr<FoldedStacks> parsed = FoldedStacks::Parse("\na;b 2\n\n  \na;b 3\r\nc 1");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->ToText(), "a;b 5\nc 1\n");
  EXPECT_EQ(parsed->total_samples(), 6);
}

TEST(FoldedStacksTest, MalformedLinesNameTheLine) {
  const std::vector<std::string> bad_lines = {
      "a;b",       // missing count
      "a;b 0",     // count 0
      "a;b -3",    // negative
      "a;b x7",    // non-numeric
      "a;;b 1",    // empty frame
      ";a 1",      // empty root frame
      "a; 1",      // empty leaf frame
      " 4",        // no stack
      "a 99999999999999999999",  // overflows int64
      "ok;fine 9223372036854775807",  // the sum overflows int64 (seen writing folded_stacks_fuzzer)
  };
  for (const std::string& bad : bad_lines) {
    absl::StatusOr<FoldedStacks> parsed = FoldedStacks::Parse("ok;fine 1\n\n" + bad + "\n");
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find("line 3"), std::string::npos)
        << bad << ": " << parsed.status();
  }
}

TEST(FoldedStacksTest, AddSanitizesWhatTheFormatCannotCarry) {
  FoldedStacks stacks;
  stacks.Add(std::vector<std::string>{"a;b", "", "c\nd"}, 1);
  EXPECT_EQ(stacks.ToText(), "a_b;[unknown];c_d 1\n");
}

// Found by perf_script_fuzzer: a leaf frame ending in whitespace was written
// as it was, and read back without it, so Parse(ToText()) differed.
TEST(FoldedStacksTest, AddDropsWhitespaceAtFrameEndsSoTheTextReadsBack) {
  FoldedStacks stacks;
  stacks.Add(std::vector<std::string>{" main ", "f(int)\t", " \t"}, 2);
  EXPECT_EQ(stacks.ToText(), "main;f(int);[unknown] 2\n");
  absl::StatusOr<FoldedStacks> again = FoldedStacks::Parse(stacks.ToText());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, stacks);
}

TEST(FoldedStacksTest, TopNCountsSelfAndTotalOncePerStack) {
  absl::StatusOr<FoldedStacks> stacks = FoldedStacks::Parse(
      "main;fib;fib;fib 6\n"   // recursion: fib counts once in total
      "main;fib 2\n"
      "main;parse;lex 1\n"
      "main 1\n");
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  ASSERT_EQ(stacks->total_samples(), 10);

  std::vector<FunctionSamples> top = stacks->TopN(10);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0], (FunctionSamples{"fib", 8, 8, 80.0, 80.0}));
  // Ties on self (1) break on total, then name.
  EXPECT_EQ(top[1], (FunctionSamples{"main", 1, 10, 10.0, 100.0}));
  EXPECT_EQ(top[2], (FunctionSamples{"lex", 1, 1, 10.0, 10.0}));
  EXPECT_EQ(top[3], (FunctionSamples{"parse", 0, 1, 0.0, 10.0}));

  std::vector<FunctionSamples> top2 = stacks->TopN(2);
  ASSERT_EQ(top2.size(), 2u);
  EXPECT_EQ(top2[0].name, "fib");
  EXPECT_EQ(top2[1].name, "main");
  EXPECT_TRUE(FoldedStacks().TopN(3).empty());
}

}  // namespace
}  // namespace backendlab::profiling
