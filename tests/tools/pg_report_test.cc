// pg's saturation lines on hand-made rounds: each series of clients is
// called saturated, not resolved or still growing as
// pgreal/many_connections.h's rule finds it, with the step that shows it.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pgreal/many_connections.h"
#include "pgreal/pg_run.h"
#include "tools/pg_report.h"

namespace backendlab::tools {
namespace {

// Debian's 15 at 128MB and 1, 2, 4 and 8 clients ("15/128MB"), whose
// conn/s are those of the row before times each round's factor in `steps`
// (1 client: 100, 110, 90, 100).
pgreal::PgResult Series(const std::vector<std::vector<double>>& steps) {
  pgreal::PgResult result;
  result.shows.clients = true;
  pgreal::PgTargetResult first;
  first.key.bindir = "/usr/lib/postgresql/15/bin";
  first.key.major = 15;
  first.key.shared_buffers_bytes = int64_t{128} << 20;
  first.label = first.key.Label(result.shows);
  first.rates = {100, 110, 90, 100};
  result.targets.push_back(first);
  for (const std::vector<double>& step : steps) {
    pgreal::PgTargetResult next = result.targets.back();
    next.key.clients *= 2;
    next.label = next.key.Label(result.shows);
    for (size_t r = 0; r < step.size(); ++r) next.rates[r] *= step[r];
    result.targets.push_back(next);
  }
  for (const pgreal::PgTargetResult& t : result.targets) {
    ServerStats s;
    s.rate = MedianWithInterval(t.rates);
    result.stats.push_back(s);
  }
  result.saturation = pgreal::ComputeSaturation(result.targets, result.stats, 2);
  return result;
}

// The line under the saturation table that names the series.
std::string SaturationLine(const pgreal::PgResult& result) {
  std::ostringstream out;
  PrintManyConnections(result, 2, out);
  const std::string text = out.str();
  const size_t at = text.find("\n15/128MB: ");
  if (at == std::string::npos) return "no line for 15/128MB in:\n" + text;
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

const std::vector<double> kFaster = {1.5, 1.5, 1.5, 1.5};
const std::vector<double> kFlat = {1.00, 1.01, 0.99, 1.00};  // ~, a gain of at most 2 %
const std::vector<double> kWide = {1.00, 1.15, 0.90, 1.05};  // ~, a gain of up to 20 %

TEST(PgReportTest, ASaturationLineSaysWhichTheRunFoundAndTheStepThatShowsIt) {
  const std::string saturated = SaturationLine(Series({kFaster, kFlat, kWide}));
  EXPECT_EQ(saturated.rfind("15/128MB: saturated at 2 clients: conn/s at 4 clients over 2 clients: ", 0), 0u) << saturated;
  EXPECT_NE(saturated.find("~, a gain of 5 % or more ruled out, and no later step faster"), std::string::npos) << saturated;

  const std::string again = SaturationLine(Series({kFaster, kFlat, {1.2, 1.22, 1.18, 1.2}}));
  EXPECT_EQ(again.rfind("15/128MB: saturation not resolved: conn/s at 4 clients over 2 clients: ", 0), 0u) << again;
  EXPECT_NE(again.find(", then grew again: conn/s at 8 clients over 4 clients: "), std::string::npos) << again;
  EXPECT_NE(again.find("faster; at 8 clients, the most asked for"), std::string::npos) << again;

  const std::string wide = SaturationLine(Series({kFaster, kWide, kFlat}));
  EXPECT_EQ(wide.rfind("15/128MB: saturation not resolved: conn/s at 4 clients over 2 clients: ", 0), 0u) << wide;
  EXPECT_NE(wide.find("(up to +20 %: a gain of 5 % or more not ruled out); at 8 clients"), std::string::npos) << wide;
  EXPECT_EQ(wide.find("grew again"), std::string::npos) << wide;

  const std::string grew = SaturationLine(Series({kFaster, kFaster, kFaster}));
  EXPECT_EQ(grew.rfind("15/128MB: conn/s still grew at every step up to 8 clients, the most asked for: not saturated", 0), 0u)
      << grew;
}

}  // namespace
}  // namespace backendlab::tools
