// The contention model: mean-value analysis against closed forms, the fit
// reproducing the 2-worker rate, and the stations each variant visits.
#include "xlog/contention_model.h"

#include <vector>

#include "gtest/gtest.h"

namespace backendlab::xlog {
namespace {

TEST(MeanValueTest, OneCustomerIsThinkPlusService) {
  const std::vector<ModelStation> s = {{"a", 1, 50}};
  EXPECT_DOUBLE_EQ(MeanValueThroughput(s, 150, 1), 1.0 / 200);
}

TEST(MeanValueTest, ManyCustomersSaturateTheBottleneck) {
  const std::vector<ModelStation> s = {{"a", 1, 50}, {"b", 0.5, 40}};
  EXPECT_NEAR(MeanValueThroughput(s, 150, 1000), 1.0 / 50, 1e-6) << "1 / (visits x service) of the busiest";
  // Throughput never falls as customers are added, and never passes the bound.
  double previous = 0;
  for (int n = 1; n <= 64; ++n) {
    const double x = MeanValueThroughput(s, 150, n);
    EXPECT_GE(x, previous - 1e-15) << n;
    EXPECT_LE(x, 1.0 / 50 + 1e-12) << n;
    previous = x;
  }
}

TEST(MeanValueTest, TwoCustomersOneStationMatchTheClosedForm) {
  // Z = 100, S = 100: Q1 = 0.5, R2 = 150, X2 = 2 / (100 + 150).
  const std::vector<ModelStation> s = {{"a", 1, 100}};
  EXPECT_DOUBLE_EQ(MeanValueThroughput(s, 100, 2), 2.0 / 250);
}

ModelInputs Inputs(Tracker v, double x1, double x2) {
  ModelInputs in;
  in.variant = v;
  in.locks = 8;
  in.important_share = 0.9;
  in.coherence_ns = 60;
  in.records_per_second_1 = x1;
  in.records_per_second_2 = x2;
  return in;
}

TEST(CalibrationTest, TheFitReproducesTheTwoWorkerRate) {
  for (Tracker v : kAllTrackers) {
    // 200 ns an insert alone, 5e6/s with two: the serial part costs
    // some transfers of 60 ns per visit.
    absl::StatusOr<ModelCalibration> c = CalibrateModel(Inputs(v, 5e6, 5e6));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->clamped) << TrackerName(v);
    EXPECT_NEAR(PredictRecordsPerSecond(*c, 2), 5e6, 5e6 * 1e-6) << TrackerName(v);
    EXPECT_DOUBLE_EQ(PredictRecordsPerSecond(*c, 1), 5e6) << "one worker is the measurement";
    EXPECT_GT(c->reservation_transfers, 0);
  }
}

TEST(CalibrationTest, TwoWorkersScalingPerfectlyClampTheTransfersAtZero) {
  absl::StatusOr<ModelCalibration> c = CalibrateModel(Inputs(Tracker::kPerLock, 10e6, 20e6));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->clamped);
  EXPECT_EQ(c->reservation_transfers, 0);
}

TEST(CalibrationTest, BadInputsAreErrors) {
  EXPECT_FALSE(CalibrateModel(Inputs(Tracker::kPerLock, 0, 1)).ok());
  ModelInputs in = Inputs(Tracker::kPerLock, 1e6, 1e6);
  in.coherence_ns = 0;
  EXPECT_FALSE(CalibrateModel(in).ok());
}

TEST(StationsTest, CentralVariantsVisitALineOfTheirOwn) {
  EXPECT_EQ(ModelStations(Inputs(Tracker::kPerLock, 1e7, 1e7), 1, 0, 8).size(), 1u) << "the reservation only";
  EXPECT_EQ(ModelStations(Inputs(Tracker::kPerLockAtomic, 1e7, 1e7), 1, 0, 8).size(), 1u);
  EXPECT_EQ(ModelStations(Inputs(Tracker::kCentralAtomic, 1e7, 1e7), 1, 1, 8).size(), 2u);
  const std::vector<ModelStation> nine = ModelStations(Inputs(Tracker::kCentralSpinlock, 1e7, 1e7), 2, 3, 9);
  ASSERT_EQ(nine.size(), 2u) << "the insert locks bound who visits, they are not a station";
  EXPECT_DOUBLE_EQ(nine[0].service_ns, 120) << "2 transfers of 60 ns";
  EXPECT_DOUBLE_EQ(nine[1].service_ns, 180);
  EXPECT_DOUBLE_EQ(nine[1].visits, 0.9);
  EXPECT_DOUBLE_EQ(StructuralTransfersPerInsert(Inputs(Tracker::kPerLock, 1e7, 1e7), 8), 1);
  EXPECT_DOUBLE_EQ(StructuralTransfersPerInsert(Inputs(Tracker::kCentralAtomic, 1e7, 1e7), 32), 2.9);
  EXPECT_DOUBLE_EQ(StructuralTransfersPerInsert(Inputs(Tracker::kPerLock, 1e7, 1e7), 1), 0);
}

TEST(PredictionTest, ACentralVariantKeepsPerLocksReservationAndFitsItsOwnLine) {
  absl::StatusOr<ModelCalibration> per_lock = CalibrateModel(Inputs(Tracker::kPerLock, 20e6, 12e6));
  ASSERT_TRUE(per_lock.ok());
  ModelInputs central_in = Inputs(Tracker::kCentralAtomic, 19e6, 8e6);
  central_in.reservation_transfers = per_lock->reservation_transfers;
  absl::StatusOr<ModelCalibration> central = CalibrateModel(central_in);
  ASSERT_TRUE(central.ok());
  EXPECT_DOUBLE_EQ(central->reservation_transfers, per_lock->reservation_transfers);
  EXPECT_GT(central->line_transfers, 0);
  EXPECT_FALSE(central->clamped);
  EXPECT_NEAR(PredictRecordsPerSecond(*central, 2), 8e6, 8e6 * 1e-6);
  EXPECT_NEAR(FittedTransfersPerInsert(*central, 8),
              per_lock->reservation_transfers + 0.9 * central->line_transfers, 1e-9);
  // Past the lock count the rate is the lock count's, less a lock handoff.
  EXPECT_LT(PredictRecordsPerSecond(*per_lock, 96), PredictRecordsPerSecond(*per_lock, 8));
  EXPECT_DOUBLE_EQ(PredictRecordsPerSecond(*per_lock, 96), PredictRecordsPerSecond(*per_lock, 32));
  // A second contended line never makes the insert path faster, and nothing
  // passes the reservation's bound.
  for (int n : {8, 32, 96}) {
    EXPECT_LT(PredictRecordsPerSecond(*central, n), PredictRecordsPerSecond(*per_lock, n)) << n;
    EXPECT_LE(PredictRecordsPerSecond(*per_lock, n), 1e9 / (per_lock->reservation_transfers * 60) + 1) << n;
  }
}

}  // namespace
}  // namespace backendlab::xlog
