// PostgreSQL 18's "connection ready" line: parsed after any log prefix,
// refused in every other shape, and summarised over connections.
#include "pgreal/setup_durations.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace backendlab::pgreal {
namespace {

TEST(SetupDurationsTest, TheServersLineIsReadAfterAnyPrefix) {
  // As PostgreSQL 18 writes it with log_connections=setup_durations, under
  // a default log_line_prefix and under a verbose one (the SQLSTATE first).
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
