// The experiment's shape: rows in order, ratios to per-lock and to the
// reader-off row, the model's rows, bad options, and a stop request.
#include "xlog/xlog_experiment.h"

#include <cmath>
#include <csignal>

#include "base/cpus.h"
#include "base/interrupt.h"
#include "gtest/gtest.h"
#include "tests/test_util/skip.h"

namespace backendlab::xlog {
namespace {

XlogExperimentOptions Tiny() {
  XlogExperimentOptions o;
  o.variants = {Tracker::kPerLock, Tracker::kCentralAtomic};
  o.workers = {1, 2};
  o.record_sizes = {32};
  o.readers = {ReaderRate::kOff, ReaderRate::kMax};
  o.locks = {8};
  o.model_workers = {8, 96};
  o.rounds = 2;  // the fewest that give a paired ratio an interval
  // Long enough that every worker is scheduled in its window even on a
  // loaded 2-core host under ASan (5 ms once gave a row no inserts).
  o.window = absl::Milliseconds(40);
  return o;
}

// The experiment measures what two CPUs do at once (the coherence latency,
// the model's calibration from 1 and 2 workers): on one it says so, and
// these tests, which check that part, cannot run.
#define SKIP_UNLESS_TWO_CPUS()                                                                   \
  if (AllowedCpus().size() < 2) {                                                               \
    BACKENDLAB_SKIP(backendlab::test_util::kNeedsTwoCpus) << "this process may run on " << AllowedCpus().size() \
                                              << " CPU only (taskset, cgroup cpuset)";          \
  }

TEST(XlogExperimentTest, ATinyRunGivesEveryRowWithItsRatiosAndTheModel) {
  SKIP_UNLESS_TWO_CPUS();
  absl::StatusOr<XlogExperimentResult> r = RunXlogExperiment(Tiny());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), 8u);
  double reader_calls = 0;
  // Workers outer, readers, then variants inner.
  EXPECT_EQ(r->rows[0].config.variant, Tracker::kPerLock);
  EXPECT_EQ(r->rows[1].config.variant, Tracker::kCentralAtomic);
  EXPECT_EQ(r->rows[2].config.reader, ReaderRate::kMax);
  EXPECT_EQ(r->rows[4].config.workers, 2);
  for (const XlogRow& row : r->rows) {
    SCOPED_TRACE(std::string(TrackerName(row.config.variant)) + "/" + std::to_string(row.config.workers) + "/" +
                 std::string(ReaderRateName(row.config.reader)));
    EXPECT_GT(row.records_per_second.median, 0);
    EXPECT_GT(row.insert_p99_ns, 0);
    ASSERT_EQ(row.records_per_second_by_round.size(), 2u);
    ASSERT_TRUE(row.records_vs_per_lock);
    if (row.config.variant == Tracker::kPerLock) {
      EXPECT_DOUBLE_EQ(row.records_vs_per_lock->ratio, 1);
      EXPECT_FALSE(row.records_vs_per_lock->has_interval) << "a row against itself has no interval";
    } else {
      // Paired: the geometric mean of the two rounds' ratios to per-lock's.
      const XlogRow& base = r->rows[&row - r->rows.data() - 1];
      ASSERT_EQ(base.config.variant, Tracker::kPerLock);
      const std::vector<double>& a = row.records_per_second_by_round;
      const std::vector<double>& b = base.records_per_second_by_round;
      EXPECT_NEAR(row.records_vs_per_lock->ratio, std::sqrt(a[0] / b[0] * (a[1] / b[1])),
                  1e-9 * row.records_vs_per_lock->ratio);
      ASSERT_TRUE(row.records_vs_per_lock->has_interval);
      EXPECT_TRUE(row.records_vs_per_lock->interval.Covers(row.records_vs_per_lock->ratio));
    }
    ASSERT_TRUE(row.records_vs_reader_off);
    if (row.config.reader == ReaderRate::kOff) {
      EXPECT_DOUBLE_EQ(row.records_vs_reader_off->ratio, 1);
      EXPECT_FALSE(row.reader_ns) << "no reader, no reader figure";
    } else {
      reader_calls += row.reader_calls_per_second;
      EXPECT_EQ(row.reader_ns.has_value(), row.reader_calls_per_second > 0);
    }
  }
  // A window is short and the machine has two cores for three threads: a
  // reader may not be scheduled in one, but not in none of them.
  EXPECT_GT(reader_calls, 0);
  ASSERT_TRUE(r->coherence_ns) << "this machine has two cores";
  EXPECT_GT(r->coherence_ns->median, 0);
  ASSERT_EQ(r->model.size(), 2u) << r->model_missing;
  EXPECT_EQ(r->model[0].calibration.inputs.variant, Tracker::kPerLock);
  ASSERT_EQ(r->model[0].points.size(), 2u);
  EXPECT_EQ(r->model[0].points[1].workers, 96);
  ASSERT_TRUE(r->model[1].points[0].vs_per_lock);
  EXPECT_DOUBLE_EQ(*r->model[0].points[0].vs_per_lock, 1);
}

TEST(XlogExperimentTest, WithoutOneAndTwoWorkersThereIsNoModelAndItSaysWhy) {
  SKIP_UNLESS_TWO_CPUS();
  XlogExperimentOptions o = Tiny();
  o.workers = {2};
  o.readers = {ReaderRate::kOff};
  absl::StatusOr<XlogExperimentResult> r = RunXlogExperiment(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->model.empty());
  EXPECT_NE(r->model_missing.find("1 and 2 workers"), std::string::npos) << r->model_missing;
}

TEST(XlogExperimentTest, BadOptionsAreInvalidArgument) {
  std::vector<XlogExperimentOptions> bad(7, Tiny());
  bad[0].variants.clear();
  bad[1].workers = {2, 2};
  bad[2].record_sizes = {30};
  bad[3].locks = {0};
  bad[4].workers = {kMaxWorkers + 1};
  bad[5].unimportant_percent = 101;
  bad[6].model_workers = {1};
  for (size_t i = 0; i < bad.size(); ++i) {
    absl::StatusOr<XlogExperimentResult> r = RunXlogExperiment(bad[i]);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << i << ": " << r.status();
  }
}

TEST(XlogExperimentTest, AStopRequestEndsTheRunWithCancelledAndNoRows) {
  RequestStop(SIGINT);
  absl::StatusOr<XlogExperimentResult> r = RunXlogExperiment(Tiny());
  EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
  ResetStopRequestForTesting();
}

TEST(ReaderRateTest, NamesAndRates) {
  EXPECT_EQ(ReaderRateName(ReaderRate::kBgwriter), "bgwriter");
  EXPECT_DOUBLE_EQ(ReaderCallsPerSecond(ReaderRate::kBgwriter), 1.0 / 15);
  EXPECT_DOUBLE_EQ(ReaderCallsPerSecond(ReaderRate::k100Hz), 100);
  EXPECT_FALSE(ParseReaderRate("often").ok());
  EXPECT_EQ(*ParseTracker("per-lock-atomic"), Tracker::kPerLockAtomic);
}

}  // namespace
}  // namespace backendlab::xlog
