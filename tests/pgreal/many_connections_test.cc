// Many connections on hand-made rows: each row's baseline is the row that
// differs from it in one change (hold, transport, what-if); the time to open
// held connections per connection against the fewest held, paired; the held
// backends' memory over the rounds; and where conn/s stops growing as the
// clients grow, with what was busiest there.
#include "pgreal/many_connections.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pgreal/pg_run.h"

namespace backendlab::pgreal {
namespace {

PgTargetResult Row(const std::string& label, int clients, int64_t hold, Transport transport = Transport::kUnix) {
  PgTargetResult t;
  t.label = label;
  t.key.clients = clients;
  t.key.hold = hold;
  t.key.transport = transport;
  t.key.bindir = "/pg15/bin";
  t.key.major = 15;
  t.key.shared_buffers_bytes = 128 << 20;
  return t;
}

TEST(ManyConnectionsTest, EachRowIsComparedWithTheRowThatLacksItsOneChange) {
  std::vector<PgTargetResult> rows = {
      Row("unix hold 0", 1, 0),                     // 0: the baseline of the run
      Row("unix hold 100", 1, 100),                 // 1: -> 0, the fewest held
      Row("tcp hold 0", 1, 0, Transport::kTcp),     // 2: -> 0, through the Unix socket
      Row("tcp hold 100", 1, 100, Transport::kTcp),  // 3: -> 1, the same hold through the Unix socket
      Row("unix hold 0 4 clients", 4, 0),           // 4: its own, at 4 clients
      Row("unix hold 100 4 clients", 4, 100),       // 5: -> 4
  };
  rows.push_back(Row("+quick-exit tcp hold 100", 1, 100, Transport::kTcp));  // 6: -> 3, its stock row
  rows.back().key.what_if = WhatIf{WhatIfKind::kQuickExit, ""};
  PgTargetResult other = Row("18 unix hold 100", 1, 100);  // 7: another server: -> its own fewest held... none here
  other.key.bindir = "/pg18/bin";
  other.key.major = 18;
  rows.push_back(other);
  const std::vector<size_t> expected = {0, 0, 0, 1, 4, 4, 3, 7};
  const std::vector<size_t> baselines = BaselineIndices(rows);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(baselines[i], expected[i]) << rows[i].label;
}

TEST(ManyConnectionsTest, OpeningTimePerConnectionIsPairedWithTheFewestHeld) {
  std::vector<PgTargetResult> rows = {Row("hold 0", 1, 0), Row("hold 100", 1, 100), Row("hold 400", 1, 400)};
  for (PgTargetResult& r : rows) r.rates = {100, 100};
  rows[1].hold_open_ms = {100, 200};  // 1 and 2 ms a connection
  rows[2].hold_open_ms = {800, 800};  // 2 and 2 ms: 2x and 1x the fewest's in the same rounds
  rows[1].held_memory = {{12000, 1500, 1000, 140}, {13000, 1700, 1100, 150}};
  rows[2].held_memory = {{12000, 1500, 1000, 140}};  // a round that could not read it: none
  const std::vector<HoldStats> h = ComputeHoldStats(rows);
  EXPECT_FALSE(h[0].held) << "nothing held";
  ASSERT_TRUE(h[1].held && h[2].held);
  EXPECT_DOUBLE_EQ(h[1].open_ms.median, 150);
  EXPECT_DOUBLE_EQ(h[2].open_ms_per_connection.median, 2);
  EXPECT_EQ(h[2].fewest, 1u);
  ASSERT_TRUE(h[1].per_connection_vs_fewest && h[1].per_connection_vs_fewest->self);
  ASSERT_TRUE(h[2].per_connection_vs_fewest.has_value());
  EXPECT_NEAR(h[2].per_connection_vs_fewest->ratio, std::sqrt(2.0 * 1.0), 1e-12);
  ASSERT_TRUE(h[1].memory.has_value());
  EXPECT_EQ(h[1].memory->private_kb, 1050);
  EXPECT_EQ(h[1].memory->page_tables_kb, 145);
  EXPECT_FALSE(h[2].memory.has_value()) << "a round without memory leaves the row without it";
}

// Four rounds at 1, 2 and 4 clients: 2 clients do 1.5x one client's conn/s
// in every round (faster), 4 clients what 2 do (not faster): saturated at 2,
// where the CPUs were the busiest.
TEST(ManyConnectionsTest, SaturationIsWhereMoreClientsNoLongerRaiseTheRateAndTheBusiestIsNamed) {
  std::vector<PgTargetResult> rows = {Row("1", 1, 0), Row("2", 2, 0), Row("4", 4, 0)};
  rows[0].rates = {100, 110, 90, 100};
  rows[1].rates = {150, 165, 135, 150};
  rows[2].rates = {150, 160, 140, 150};
  for (PgTargetResult& r : rows) {
    r.loop.connections = 1000;
    r.loop.client.cpu_ns = 1000 * 200'000;  // 200 us a connection
  }
  std::vector<ServerStats> stats(3);
  for (size_t i = 0; i < 3; ++i) {
    stats[i].rate = MedianWithInterval(rows[i].rates);
    stats[i].has_cpu = true;
    stats[i].cpu_us.median = 12'000;  // 150 conn/s x 12.2 ms of 2 CPUs: 92 % busy
    stats[i].has_postmaster_cpu = true;
    stats[i].postmaster_cpu_us.median = 1000;
    stats[i].ceiling.median = 1000;
  }
  const SaturationReport r = ComputeSaturation(rows, stats, 2);
  ASSERT_EQ(r.series.size(), 1u);
  const SaturationSeries& s = r.series[0];
  EXPECT_EQ(s.rows, (std::vector<size_t>{0, 1, 2}));
  ASSERT_TRUE(s.saturated_at.has_value());
  EXPECT_EQ(*s.saturated_at, 1u);
  EXPECT_EQ(s.bound, kBoundCpus);
  EXPECT_NEAR(r.rows[1].cpus_busy, 150 * 12'200e-6 / 2, 1e-12);
  EXPECT_NEAR(r.rows[1].postmaster_busy, 0.15, 1e-12);
  EXPECT_NEAR(r.rows[1].client_busy, 0.03, 1e-12);
  ASSERT_TRUE(r.rows[1].rate_vs_previous.has_value());
  EXPECT_EQ(r.rows[1].rate_vs_previous->verdict, Verdict::kFaster);
  EXPECT_FALSE(r.rows[0].previous.has_value());

  // A postmaster busier than the CPUs is the bound; a run whose rate grew at
  // every step is not saturated, and its busiest is read at the most clients.
  for (ServerStats& st : stats) st.postmaster_cpu_us.median = 6500;  // 150 conn/s x 6.5 ms: 98 % of its core
  EXPECT_EQ(ComputeSaturation(rows, stats, 2).series[0].bound, kBoundPostmaster);
  rows[2].rates = {300, 330, 270, 300};
  const SaturationReport grew = ComputeSaturation(rows, stats, 2);
  EXPECT_FALSE(grew.series[0].saturated_at.has_value());
  // At 4 clients the postmaster's 300 x 6.5 ms of its one core is more than the CPUs' share.
  EXPECT_EQ(grew.series[0].bound, kBoundPostmaster);
}

// Rows at 1, 2, 4 and 8 clients whose conn/s are those of the row before
// times each round's factor in `steps` (1 client: 100, 110, 90, 100).
std::vector<PgTargetResult> Series(const std::vector<std::vector<double>>& steps) {
  std::vector<PgTargetResult> rows = {Row("1", 1, 0)};
  rows[0].rates = {100, 110, 90, 100};
  for (const std::vector<double>& step : steps) {
    PgTargetResult next = Row(std::to_string(rows.back().key.clients * 2), rows.back().key.clients * 2, 0);
    for (size_t r = 0; r < step.size(); ++r) next.rates.push_back(rows.back().rates[r] * step[r]);
    rows.push_back(std::move(next));
  }
  return rows;
}

SaturationSeries SeriesOf(const std::vector<PgTargetResult>& rows) {
  std::vector<ServerStats> stats(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) stats[i].rate = MedianWithInterval(rows[i].rates);
  const SaturationReport r = ComputeSaturation(rows, stats, 2);
  EXPECT_EQ(r.series.size(), 1u);
  return r.series.empty() ? SaturationSeries{} : r.series[0];
}

// A `~` is not "no gain": a step whose interval allows more than the
// margin, or a later step that is `faster` again, leaves the saturation
// not resolved; only a step bounded under the margin with no faster step
// after it is saturation.
TEST(ManyConnectionsTest, SaturationNeedsAStepBoundedUnderTheMarginAndNoFasterStepAfterIt) {
  const std::vector<double> faster = {1.5, 1.5, 1.5, 1.5};
  const std::vector<double> flat = {1.00, 1.01, 0.99, 1.00};   // [0.987, 1.013]: ~, any gain under 2 %
  const std::vector<double> wide = {1.00, 1.15, 0.90, 1.05};   // ~, but up to +20 %
  const std::vector<double> faster_again = {1.20, 1.22, 1.18, 1.20};

  // 2 -> 4 flat, 4 -> 8 faster again: the flat step was not the end.
  const SaturationSeries again = SeriesOf(Series({faster, flat, faster_again}));
  EXPECT_EQ(again.finding, SaturationFinding::kNotResolved);
  EXPECT_FALSE(again.saturated_at.has_value()) << "saturated at row " << again.saturated_at.value_or(99);
  EXPECT_EQ(again.first_not_faster, std::optional<size_t>(2));
  EXPECT_EQ(again.later_faster, std::optional<size_t>(3));

  // 2 -> 4 `~` but its interval reaches +20 %: a gain past the margin is not ruled out.
  const SaturationSeries unsure = SeriesOf(Series({faster, wide, flat}));
  EXPECT_EQ(unsure.finding, SaturationFinding::kNotResolved);
  EXPECT_FALSE(unsure.saturated_at.has_value()) << "saturated at row " << unsure.saturated_at.value_or(99);
  EXPECT_EQ(unsure.first_not_faster, std::optional<size_t>(2));
  EXPECT_FALSE(unsure.later_faster.has_value());

  // 2 -> 4 flat and under the margin, 4 -> 8 `~` (wide) but not faster: saturated at 2.
  const SaturationSeries flat_after = SeriesOf(Series({faster, flat, wide}));
  EXPECT_EQ(flat_after.finding, SaturationFinding::kSaturated);
  EXPECT_EQ(flat_after.saturated_at, std::optional<size_t>(1));

  // Faster at every step: still grew.
  const SaturationSeries grew = SeriesOf(Series({faster, faster, faster_again}));
  EXPECT_EQ(grew.finding, SaturationFinding::kGrew);
  EXPECT_FALSE(grew.saturated_at.has_value());
  EXPECT_FALSE(grew.first_not_faster.has_value());
}

}  // namespace
}  // namespace backendlab::pgreal
