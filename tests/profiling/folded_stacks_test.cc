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

// The reader takes the text in pieces of any size, a line across pieces,
// and reads what Parse reads of it whole.
TEST(FoldedStacksReaderTest, ReadsLinesAcrossPiecesAsParseDoes) {
  const std::string text = "\nmain;run;work 5\r\nmain;fib;fib 2\n  \nmain;run;work 3\nc 1";
  for (size_t piece = 1; piece <= 7; ++piece) {
    FoldedStacksReader reader;
    for (size_t at = 0; at < text.size(); at += piece) ASSERT_TRUE(reader.Read(text.substr(at, piece)).ok()) << piece;
    absl::StatusOr<FoldedStacks> read = std::move(reader).Finish();
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->ToText(), "c 1\nmain;fib;fib 2\nmain;run;work 8\n") << piece;
  }
  FoldedStacksReader bad;
  ASSERT_TRUE(bad.Read("a 1\nb ").ok());
  const absl::Status s = bad.Read("two\nc 1\n");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("line 2"), std::string::npos) << s;
  EXPECT_EQ(bad.Read("d 1\n"), s) << "an error ends the reading";
}

// Probe defect 7 (2026-12-05): one endless line was read into memory until
// the allocation failed. A line is refused once it is longer than the bound,
// before the rest of it is read; a line of exactly the bound is read.
TEST(FoldedStacksReaderTest, ALineLongerThanTheBoundIsRefusedAsSoonAsItIs) {
  constexpr size_t kMax = FoldedStacksReader::kMaxLineBytes;
  FoldedStacksReader reader;
  ASSERT_TRUE(reader.Read("ok 1\n").ok());
  const std::string mib(size_t{1} << 20, 'x');
  absl::Status s;
  size_t pieces = 0;
  while (s.ok() && pieces < 100) {
    s = reader.Read(mib);
    ++pieces;
  }
  EXPECT_EQ(pieces, kMax / mib.size() + 1) << "refused at the first piece past the bound";
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("line 2"), std::string::npos) << s;
  EXPECT_NE(s.message().find("16 MiB"), std::string::npos) << s;

  const std::string longest = std::string(kMax - 2, 'a') + " 1";
  absl::StatusOr<FoldedStacks> at_bound = FoldedStacks::Parse("ok 1\n" + longest + "\n");
  EXPECT_TRUE(at_bound.ok()) << at_bound.status();
  absl::StatusOr<FoldedStacks> past = FoldedStacks::Parse("ok 1\n" + std::string(kMax - 1, 'a') + " 1\n");
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("line 2"), std::string::npos) << past.status();
}

}  // namespace
}  // namespace backendlab::profiling
