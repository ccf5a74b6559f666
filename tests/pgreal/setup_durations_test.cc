// PostgreSQL 18's "connection ready" line: parsed after any log prefix (in
// hand-made lines and in a real server's log), refused in every other
// shape, and summarised over connections.
#include "pgreal/setup_durations.h"

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace backendlab::pgreal {
namespace {

TEST(SetupDurationsTest, TheServersLineIsReadAfterAnyPrefix) {
  // Hand-made lines in the shape of PostgreSQL 18's message, after two
  // prefixes (one with %b, one with the SQLSTATE first, as
  // log_error_verbosity=verbose writes it), the same figures in each; the
  // lines a real 18 server wrote are the test below.
  for (const std::string line :
       {"2026-09-24 01:41:46.065 UTC [87] client backend LOG:  connection ready: setup total=1.032 ms, fork=0.146 ms, "
        "authentication=0.083 ms",
        "2025-11-06 13:18:05.354 IST [21449] LOG:  00000: connection ready: setup total=1.032 ms, fork=0.146 ms, "
        "authentication=0.083 ms\r"}) {
    const std::optional<SetupDurations> d = ParseSetupDurations(line);
    ASSERT_TRUE(d) << line;
    EXPECT_DOUBLE_EQ(d->total_ms, 1.032);
    EXPECT_DOUBLE_EQ(d->fork_ms, 0.146);
    EXPECT_DOUBLE_EQ(d->authentication_ms, 0.083);
  }
  const std::optional<SetupDurations> large =
      ParseSetupDurations("LOG:  connection ready: setup total=12345.678 ms, fork=0.000 ms, authentication=9999.999 ms");
  ASSERT_TRUE(large);
  EXPECT_DOUBLE_EQ(large->total_ms, 12345.678);
  EXPECT_DOUBLE_EQ(large->fork_ms, 0);
}

// A real PostgreSQL 18's log (testdata/pg18_setup_durations.log: its first
// lines say the command that made it): every "connection ready" line reads,
// each connection's set-up at least its fork and its authentication (parts
// of it that do not overlap, each rounded to a microsecond), and none of
// the server's other lines is taken for one.
TEST(SetupDurationsTest, ARealServersLogReadsOneLinePerConnection) {
  std::ifstream in(std::string(BACKENDLAB_PGREAL_TESTDATA) + "/pg18_setup_durations.log");
  ASSERT_TRUE(in) << "no testdata";
  int ready = 0, others = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#")) continue;  // the fixture's own note
    const std::optional<SetupDurations> d = ParseSetupDurations(line);
    if (line.find("connection ready: ") == std::string::npos) {
      ++others;
      EXPECT_FALSE(d) << line;
      continue;
    }
    ++ready;
    ASSERT_TRUE(d) << line;
    EXPECT_GT(d->total_ms, 0) << line;
    EXPECT_GT(d->fork_ms, 0) << line;
    EXPECT_GE(d->total_ms + 0.002, d->fork_ms + d->authentication_ms) << line;
  }
  EXPECT_EQ(ready, 3) << "three connections";
  EXPECT_GT(others, 0) << "the start-up and shut-down lines are in the fixture too";
}

TEST(SetupDurationsTest, EveryOtherShapeIsNotASetupLine) {
  for (const char* line : {
           "",
           "LOG:  connection authorized: user=postgres database=postgres application_name=psql",
           "LOG:  connection ready: setup total=1.032 ms, fork=0.146 ms",                             // cut short
           "LOG:  connection ready: setup total=1.03 ms, fork=0.146 ms, authentication=0.083 ms",     // not %.3f
           "LOG:  connection ready: setup total=-1.032 ms, fork=0.146 ms, authentication=0.083 ms",   // negative
           "LOG:  connection ready: setup total=nan ms, fork=0.146 ms, authentication=0.083 ms",
           "LOG:  connection ready: setup total=1.032 ms, fork=0.146 ms, authentication=0.083 ms, x",  // more after it
           "LOG:  connection ready: setup total=1.0.32 ms, fork=0.146 ms, authentication=0.083 ms",
           "LOG:  connection ready: setup total=1.032ms, fork=0.146 ms, authentication=0.083 ms",
       }) {
    EXPECT_FALSE(ParseSetupDurations(line)) << line;
  }
}

TEST(SetupDurationsTest, EachFigureIsSummarisedOverTheConnections) {
  const std::vector<SetupDurations> d = {{1, 0.1, 0.5}, {2, 0.2, 0.6}, {3, 0.3, 0.7}, {4, 0.4, 0.8}, {5, 0.5, 0.9}};
  const SetupSummary s = SummarizeSetupDurations(d);
  EXPECT_EQ(s.total_ms.count, 5);
  EXPECT_DOUBLE_EQ(s.total_ms.median, 3);
  EXPECT_DOUBLE_EQ(s.fork_ms.median, 0.3);
  EXPECT_DOUBLE_EQ(s.authentication_ms.median, 0.7);
  EXPECT_DOUBLE_EQ(s.total_ms.p90, 4.6) << "linear between closest ranks: 4 + 0.6 x (5 - 4)";
  EXPECT_EQ(SummarizeSetupDurations({}).total_ms.count, 0);
}

}  // namespace
}  // namespace backendlab::pgreal
