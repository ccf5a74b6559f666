// The comparison's matrix (order, labels, baseline, the A/A copy), its
// baselines, its statistics on hand-made rounds, and its rounds (inproc
// cycles, one companion) — behaviour, never a speed.
#include "lifecycle/compare.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace backendlab::lifecycle {
namespace {

buffers::SharedBuffers Size(uint64_t bytes) { return {bytes, static_cast<uint32_t>(bytes / 8192)}; }

CompareSpec Spec() {
  CompareSpec spec;
  spec.base.connections = 4;
  spec.base.warmup = 0;
  spec.layouts = {buffers::Layout::kArray, buffers::Layout::kHash};
  spec.exit_checks = {buffers::ExitCheckPolicy::kAlways};
  spec.shared_buffers = {Size(128 << 20), Size(1 << 30)};
  spec.catcaches = {catcache::BucketStrategy::kPalloc0, catcache::BucketStrategy::kBss};
  spec.syscaches = {"pg17"};
  spec.clients = {1, 2};
  return spec;
}

std::vector<std::string> Labels(const CompareMatrix& m) {
  std::vector<std::string> labels;
  for (const CompareConfig& c : m.configs) labels.push_back(RowName(m, c));
  return labels;
}

TEST(CompareMatrixTest, SizesThenClientsThenNamesWithTheBaselineDefaulted) {
  absl::StatusOr<CompareMatrix> m = BuildCompareMatrix(Spec());
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<std::string> want = {
      "array/always/palloc0 at 128MB, 1 client", "array/always/bss at 128MB, 1 client",
      "hash/always/palloc0 at 128MB, 1 client",  "hash/always/bss at 128MB, 1 client",
      "array/always/palloc0 at 128MB, 2 clients", "array/always/bss at 128MB, 2 clients",
      "hash/always/palloc0 at 128MB, 2 clients",  "hash/always/bss at 128MB, 2 clients",
      "array/always/palloc0 at 1GB, 1 client",   "array/always/bss at 1GB, 1 client",
      "hash/always/palloc0 at 1GB, 1 client",    "hash/always/bss at 1GB, 1 client",
      "array/always/palloc0 at 1GB, 2 clients",  "array/always/bss at 1GB, 2 clients",
      "hash/always/palloc0 at 1GB, 2 clients",   "hash/always/bss at 1GB, 2 clients"};
  EXPECT_EQ(Labels(*m), want);
  EXPECT_EQ(m->baseline_label, "array/always") << "PostgreSQL 9.0's, where the matrix has it";
  const CompareConfig& c = m->configs[13];
  EXPECT_EQ(c.options.backend.layout, buffers::Layout::kArray);
  EXPECT_EQ(c.options.backend.catcache, catcache::BucketStrategy::kBss);
  EXPECT_EQ(c.options.backend.shared_buffers.bytes, uint64_t{1} << 30);
  EXPECT_EQ(c.options.clients, 2);
  EXPECT_EQ(c.options.connections, 4) << "the base's options are every configuration's";

  CompareSpec hash_only = Spec();
  hash_only.layouts = {buffers::Layout::kHash};
  absl::StatusOr<CompareMatrix> h = BuildCompareMatrix(hash_only);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->baseline_label, "hash/always") << "no array/always: the first configuration's";
}

TEST(CompareMatrixTest, BadSpecsAreUsageErrors) {
  CompareSpec missing = Spec();
  missing.baseline = {"bytes", "always"};
  EXPECT_TRUE(absl::IsInvalidArgument(BuildCompareMatrix(missing).status())) << "a baseline not in the matrix";
  CompareSpec short_name = Spec();
  short_name.baseline = {"array"};
  EXPECT_TRUE(absl::IsInvalidArgument(BuildCompareMatrix(short_name).status())) << "a baseline names two to four";
  CompareSpec empty = Spec();
  empty.catcaches.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(BuildCompareMatrix(empty).status())) << "a dimension without an entry";
  CompareSpec crowded = Spec();
  crowded.clients = {1, 5};
  EXPECT_TRUE(absl::IsInvalidArgument(BuildCompareMatrix(crowded).status())) << "5 clients for 4 connections a round";
}

TEST(CompareMatrixTest, TheBaselineIsAtTheSameSizeAndClientsAndNeverTheCopy) {
  CompareSpec spec = Spec();
  spec.aa = true;
  absl::StatusOr<CompareMatrix> m = BuildCompareMatrix(spec);
  ASSERT_TRUE(m.ok()) << m.status();
  // array/always/{palloc0,bss} are their own baselines (the baseline names
  // no catcache): each gets a copy right after it.
  ASSERT_EQ(m->configs.size(), 16u + 8u);
  EXPECT_EQ(m->configs[0].label, "array/always/palloc0");
  EXPECT_EQ(m->configs[1].label, "array/always/palloc0#2");
  EXPECT_TRUE(m->configs[1].key.aa);
  EXPECT_EQ(m->configs[2].label, "array/always/bss");
  EXPECT_EQ(m->configs[3].label, "array/always/bss#2");
  for (const CompareConfig& c : m->configs) {
    const CompareConfig* b = BaselineOf(*m, c);
    ASSERT_NE(b, nullptr) << c.label;
    EXPECT_FALSE(b->key.aa) << c.label;
    EXPECT_EQ(b->key.names[0], "array") << c.label;
    EXPECT_EQ(b->key.names[2], c.key.names[2]) << c.label << ": the catcache the baseline does not name is the row's own";
    EXPECT_EQ(b->options.backend.shared_buffers.bytes, c.options.backend.shared_buffers.bytes) << c.label;
    EXPECT_EQ(b->options.clients, c.options.clients) << c.label;
  }
  const CompareConfig* at = BaselineAt(*m, uint64_t{1} << 30, 2);
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(RowName(*m, *at), "array/always/palloc0 at 1GB, 2 clients");
  EXPECT_EQ(BaselineAt(*m, 4096, 1), nullptr) << "no configuration at that size";
}

ServerUsage Usage(int64_t connections, double cpu_us_per_connection) {
  ServerUsage u;
  u.connections = connections;
  u.cpu_ns = static_cast<int64_t>(std::llround(cpu_us_per_connection * 1e3 * static_cast<double>(connections)));
  return u;
}

// Rounds of `rates` and CPU per connection `cpu_us` for configuration `c`.
void Rounds(CompareConfig& c, std::vector<double> rates, const std::vector<double>& cpu_us) {
  c.rates = std::move(rates);
  c.server_rounds.clear();
  for (double us : cpu_us) c.server_rounds.push_back(Usage(10, us));
}

TEST(CompareStatsTest, RatiosArePairedToTheBaselineAndTheCopyMustComeOutSame) {
  CompareSpec spec = Spec();
  spec.shared_buffers.resize(1);
  spec.catcaches.resize(1);
  spec.clients = {1};
  spec.aa = true;
  absl::StatusOr<CompareMatrix> m = BuildCompareMatrix(spec);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(Labels(*m), (std::vector<std::string>{"array/always at 128MB", "array/always#2 at 128MB", "hash/always at 128MB"}));
  // The baseline drifts 100 -> 200 conn/s; hash runs at 0.8, 0.9 and 1.0 of
  // it, and at 1.1, 1.2, 1.3 of its CPU per connection, round by round. The
  // copy runs 10 % slower in every round: not the same, whatever its spread.
  Rounds(m->configs[0], {100, 150, 200}, {10, 20, 30});
  Rounds(m->configs[1], {90, 135, 180}, {11, 22, 33});
  Rounds(m->configs[2], {80, 135, 200}, {11, 24, 39});
  const Companion pg{"pg15 at 128MB", 128 << 20, 1, {m->configs[0].rates, m->configs[1].server_rounds}};
  const CompareStats stats = ComputeCompareStats(*m, std::span<const Companion>(&pg, 1), CompareReading{{}, 0, 0.02});
  ASSERT_EQ(stats.mock.size(), 3u);
  ASSERT_EQ(stats.companions.size(), 1u);
  EXPECT_EQ(stats.rounds, 3);

  EXPECT_TRUE(stats.mock[0].is_baseline);
  ASSERT_TRUE(stats.mock[0].server.rate_vs_baseline && stats.mock[0].server.rate_vs_baseline->self)
      << "the baseline's own ratio is 1 by definition, not computed";
  const ServerStats& hash = stats.mock[2].server;
  ASSERT_TRUE(hash.rate_vs_baseline && hash.cpu_vs_baseline);
  EXPECT_NEAR(hash.rate_vs_baseline->ratio, std::cbrt(0.8 * 0.9 * 1.0), 1e-9);
  EXPECT_NEAR(hash.cpu_vs_baseline->ratio, std::cbrt(1.1 * 1.2 * 1.3), 1e-9);
  EXPECT_EQ(hash.cpu_vs_baseline->rounds, 3);

  EXPECT_EQ(stats.aa_failures, std::vector<std::string>{"array/always#2 at 128MB"});
  const ServerStats& companion = stats.companions[0].server;
  ASSERT_TRUE(companion.cpu_vs_baseline);
  EXPECT_NEAR(companion.cpu_vs_baseline->ratio, 1.1, 1e-9) << "the companion against the baseline at its size";

  // The copy's ratios have zero spread: the hash row's are the widest.
  const double hash_widest = std::max(hash.rate_vs_baseline->interval.RelativeHalfWidth(hash.rate_vs_baseline->ratio),
                                      hash.cpu_vs_baseline->interval.RelativeHalfWidth(hash.cpu_vs_baseline->ratio));
  EXPECT_NEAR(stats.worst_half_width, hash_widest, 1e-12);
  EXPECT_FALSE(stats.precise) << "three rounds this spread are not within 2 %";
  EXPECT_TRUE(ComputeCompareStats(*m, {}, {}).precise) << "no precision asked: every ratio counts as precise";
  // Three rounds decide none of hash's ratios, nor the companion's: listed
  // by row and figure, each with the rounds that would likely decide it.
  ASSERT_EQ(stats.undecided.size(), 3u);
  EXPECT_EQ(stats.undecided[0].row, "hash/always at 128MB");
  EXPECT_EQ(stats.undecided[0].figure, "connections_per_second_vs_baseline");
  EXPECT_GT(stats.undecided[0].estimate.rounds_to_decide, 3);
  EXPECT_EQ(stats.undecided[2].row, "pg15 at 128MB");
  EXPECT_EQ(stats.mock[2].rounds, 3);
}

// The A/A check holds the run's A/A ratios to 95 % together: each at
// 1 - 0.05 / k. The copy's conn/s is exp(0.0125 +- 0.01) of the baseline's,
// round by round, over 6 rounds: t = 0.0125 / (0.010954 / sqrt 6) = 2.795,
// past t(0.975, 5) = 2.571, so the row's own 95 % interval excludes 1; its
// CPU is the baseline's, so the family is k = 2 ratios, each at 97.5 %,
// where t(0.9875, 5) = 3.16 holds 2.795: the check passes. A 10 % copy fails it.
TEST(CompareStatsTest, TheAaCheckHoldsTheRunsAaRatiosTo95PercentTogether) {
  CompareSpec spec = Spec();
  spec.layouts.resize(1);
  spec.shared_buffers.resize(1);
  spec.catcaches.resize(1);
  spec.clients = {1};
  spec.aa = true;
  absl::StatusOr<CompareMatrix> m = BuildCompareMatrix(spec);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->configs.size(), 2u);
  std::vector<double> copy_rates;
  for (int i = 0; i < 6; ++i) copy_rates.push_back(100 * std::exp(0.0125 + (i % 2 == 0 ? 0.01 : -0.01)));
  const std::vector<double> cpu = {10, 11, 12, 13, 14, 15};
  Rounds(m->configs[0], {100, 100, 100, 100, 100, 100}, cpu);
  Rounds(m->configs[1], copy_rates, cpu);
  const CompareStats stats = ComputeCompareStats(*m, {}, {});
  ASSERT_TRUE(stats.mock[1].server.rate_vs_baseline);
  EXPECT_EQ(stats.mock[1].server.rate_vs_baseline->verdict, Verdict::kFaster) << "alone, at 95 %";
  EXPECT_EQ(stats.aa_ratios, 2);
  EXPECT_DOUBLE_EQ(stats.aa_confidence, 0.975);
  EXPECT_TRUE(stats.aa_failures.empty()) << "held together, the family is ~";
  // With a `same` band of 3 %, the copy's 1.3 % is same: an A/A pass too.
  const CompareStats banded = ComputeCompareStats(*m, {}, CompareReading{{}, 0.03, 0});
  EXPECT_EQ(banded.mock[1].server.rate_vs_baseline->verdict, Verdict::kSame);
  EXPECT_TRUE(banded.aa_failures.empty());

  for (double& r : copy_rates) r *= 1.1;
  Rounds(m->configs[1], copy_rates, cpu);
  EXPECT_EQ(ComputeCompareStats(*m, {}, {}).aa_failures, std::vector<std::string>{"array/always#2 at 128MB"});
}

// At a look, a row whose every ratio is decided leaves the rounds, and so
// does a baseline once no row against it is undecided; a row with one
// undecided ratio stays, with its baseline. No ratio at all: every row stays.
TEST(CompareStatsTest, OnlyUndecidedRowsAndTheirBaselinesNeedMoreRounds) {
  CompareSpec spec = Spec();
  spec.layouts = {buffers::Layout::kArray, buffers::Layout::kBytes, buffers::Layout::kHash};
  spec.shared_buffers = {Size(128 << 20), Size(1 << 30)};
  spec.catcaches.resize(1);
  spec.clients = {1};
  absl::StatusOr<CompareMatrix> m = BuildCompareMatrix(spec);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->configs.size(), 6u);
  const std::vector<double> base = {100, 110, 120, 130, 140, 150};
  auto scaled = [&](double by, double jitter) {
    std::vector<double> v;
    for (size_t i = 0; i < base.size(); ++i) v.push_back(base[i] * by * (i % 2 == 0 ? 1 + jitter : 1 - jitter));
    return v;
  };
  // 128MB: bytes 30 % faster in every round (decided), hash 1 % +- 5 % (not).
  // 1GB: both 30 % faster (decided): every row there is done.
  Rounds(m->configs[0], base, base);
  Rounds(m->configs[1], scaled(1.3, 0.001), scaled(1 / 1.3, 0.001));
  Rounds(m->configs[2], scaled(1.01, 0.05), scaled(1.01, 0.05));
  Rounds(m->configs[3], base, base);
  Rounds(m->configs[4], scaled(1.3, 0.001), scaled(1 / 1.3, 0.001));
  Rounds(m->configs[5], scaled(1.3, 0.001), scaled(1 / 1.3, 0.001));
  const CompareReading reading{{}, 0.02, 0};
  EXPECT_EQ(CompareNeeded(*m, {}, reading), (std::vector<bool>{true, false, true, false, false, false}));
  // Asked for a precision of 0.01 %, no ratio is done.
  EXPECT_EQ(CompareNeeded(*m, {}, CompareReading{{}, 0.02, 0.0001}), std::vector<bool>(6, true));

  spec.layouts.resize(1);
  spec.shared_buffers.resize(1);
  absl::StatusOr<CompareMatrix> alone = BuildCompareMatrix(spec);
  ASSERT_TRUE(alone.ok());
  Rounds(alone->configs[0], base, base);
  EXPECT_EQ(CompareNeeded(*alone, {}, reading), std::vector<bool>{true}) << "no ratio: nothing to decide";
}

// Holds are where a configuration runs, as clients are: every
// configuration at each, compared with its baseline at the same hold and
// with itself at the first hold, paired round by round.
TEST(CompareStatsTest, EachHoldIsComparedWithTheBaselineThereAndWithItselfHoldingTheFewest) {
  CompareSpec spec = Spec();
  spec.shared_buffers.resize(1);
  spec.catcaches.resize(1);
  spec.clients = {1};
  spec.holds = {0, 100};
  absl::StatusOr<CompareMatrix> m = BuildCompareMatrix(spec);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(Labels(*m), (std::vector<std::string>{"array/always at 128MB, hold 0", "hash/always at 128MB, hold 0",
                                                   "array/always at 128MB, hold 100", "hash/always at 128MB, hold 100"}));
  EXPECT_EQ(BaselineOf(*m, m->configs[3]), &m->configs[2]) << "the baseline at the same hold";
  EXPECT_EQ(BaselineAt(*m, 128 << 20, 1), &m->configs[0]) << "a companion's, at the first hold";
  Rounds(m->configs[0], {100, 200}, {10, 20});
  Rounds(m->configs[1], {100, 200}, {10, 20});
  Rounds(m->configs[2], {50, 100}, {15, 30});  // 1.5x array/always's CPU at hold 0 in both rounds
  Rounds(m->configs[3], {50, 100}, {12, 26});  // 1.2x and 1.3x hash/always's
  m->configs[3].hold_open_ms = {40, 60};
  m->configs[3].held_memory = {{3000, 200, 150, 140}, {3400, 220, 160, 150}};
  const CompareStats stats = ComputeCompareStats(*m, {}, {});
  EXPECT_FALSE(stats.mock[1].cpu_vs_fewest_held.has_value()) << "at the first hold: itself";
  ASSERT_TRUE(stats.mock[2].cpu_vs_fewest_held && stats.mock[3].cpu_vs_fewest_held);
  EXPECT_NEAR(stats.mock[2].cpu_vs_fewest_held->ratio, 1.5, 1e-9);
  EXPECT_NEAR(stats.mock[3].cpu_vs_fewest_held->ratio, std::sqrt(1.2 * 1.3), 1e-9);
  EXPECT_NEAR(stats.mock[3].rate_vs_fewest_held->ratio, 0.5, 1e-9);
  ASSERT_TRUE(stats.mock[3].server.cpu_vs_baseline);
  EXPECT_NEAR(stats.mock[3].server.cpu_vs_baseline->ratio, std::sqrt(12.0 / 15 * 26 / 30), 1e-9);
  ASSERT_TRUE(stats.mock[3].hold_open_ms && stats.mock[3].held_memory);
  EXPECT_DOUBLE_EQ(stats.mock[3].hold_open_ms->median, 50);
  EXPECT_EQ(stats.mock[3].held_memory->private_kb, 155);
  // The hold ratios are held to the precision too: hash's spread is the widest.
  const RatioEstimate& widest = *stats.mock[3].cpu_vs_fewest_held;
  EXPECT_GE(stats.worst_half_width, widest.interval.RelativeHalfWidth(widest.ratio));
}

TEST(CompareRunTest, EveryConfigurationAndCompanionOncePerRound) {
  CompareSpec spec;
  spec.base.mode = Mode::kInproc;
  spec.base.connections = 2;
  spec.base.warmup = 0;
  spec.base.baseline_forks = 0;
  spec.base.backend.work_lookups = 10;
  spec.layouts = {buffers::Layout::kArray, buffers::Layout::kHash};
  spec.exit_checks = {buffers::ExitCheckPolicy::kOff};
  spec.shared_buffers = {Size(128 << 20)};
  spec.catcaches = {catcache::BucketStrategy::kPalloc0};
  spec.syscaches = {"pg17"};
  absl::StatusOr<CompareMatrix> m = BuildCompareMatrix(spec);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<double> rates;
  int measured = 0;
  Companions companions{1,
                        [&](size_t i) {
                          EXPECT_EQ(i, 0u);
                          rates.push_back(100 + measured++);
                          return absl::OkStatus();
                        },
                        [&](size_t) { return Companion{"pg", 128 << 20, 1, {rates, {}}}; }};
  CompareRunOptions options;
  options.rounds = 3;
  absl::StatusOr<PreciseRun> run = RunCompare(*m, companions, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->rounds, 3);
  EXPECT_EQ(run->ended_by, RoundsEnd::kCount);
  EXPECT_EQ(measured, 3);
  for (const CompareConfig& c : m->configs) {
    EXPECT_EQ(c.rates.size(), 3u) << c.label;
    EXPECT_EQ(c.server_rounds.size(), 3u) << c.label;
    EXPECT_EQ(c.merged.connections, 6) << c.label << ": every round's records merged";
    EXPECT_EQ(c.failure, "") << c.label;
  }

  // A companion that fails ends the run with its error.
  Companions failing{1, [](size_t) { return absl::UnavailableError("server gone"); },
                     [&](size_t) { return Companion{"pg", 128 << 20, 1, {rates, {}}}; }};
  absl::StatusOr<PreciseRun> failed = RunCompare(*m, failing, options);
  EXPECT_TRUE(absl::IsUnavailable(failed.status())) << failed.status();
}

}  // namespace
}  // namespace backendlab::lifecycle
