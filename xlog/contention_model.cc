// The contention model: its stations, mean-value analysis, and the fit.
#include "xlog/contention_model.h"

#include <algorithm>
#include <functional>


namespace backendlab::xlog {
namespace {

// More transfers per visit than any fit may reach: a bound for bisection.
constexpr double kMaxTransfersPerVisit = 1000;

bool IsCentral(Tracker t) { return t == Tracker::kCentralSpinlock || t == Tracker::kCentralAtomic; }

double LineVisits(const ModelInputs& in) { return IsCentral(in.variant) ? in.important_share : 0; }

// The central lines are visited only while an insert lock is held, so at
// most `locks` workers are ever among them; the others wait for a lock and
// hold no central line. The inserters do nothing but insert (as measured),
// so past `locks` workers the rate is that of `locks` workers, each insert
// also moving the lock's line from the worker that released it.
double ThroughputPerSecond(const ModelInputs& in, double reservation_transfers, double line_transfers, int workers) {
  const std::vector<ModelStation> stations = ModelStations(in, reservation_transfers, line_transfers, workers);
  const double think = 1e9 / in.records_per_second_1 + (workers > in.locks ? in.coherence_ns : 0);
  return 1e9 * MeanValueThroughput(stations, think, std::min(workers, in.locks));
}

// The x in [0, kMaxTransfersPerVisit] at which rate(x), falling in x, meets
// `target`; 0 (clamped) when the target is above rate(0).
double Fit(const std::function<double(double)>& rate, double target, bool& clamped) {
  double lo = 0, hi = kMaxTransfersPerVisit;
  if (target >= rate(lo)) {
    clamped = true;
    return lo;
  }
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (rate(mid) > target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

double StructuralTransfersPerInsert(const ModelInputs& inputs, int workers) {
  if (workers < 2) return 0;
  return 1 + LineVisits(inputs) + (workers > inputs.locks ? 1 : 0);
}

double FittedTransfersPerInsert(const ModelCalibration& c, int workers) {
  if (workers < 2) return 0;
  return c.reservation_transfers + LineVisits(c.inputs) * c.line_transfers + (workers > c.inputs.locks ? 1 : 0);
}

std::vector<ModelStation> ModelStations(const ModelInputs& in, double reservation_transfers, double line_transfers,
                                        int workers) {
  std::vector<ModelStation> stations;
  stations.push_back({"reservation", 1, reservation_transfers * in.coherence_ns});
  if (IsCentral(in.variant)) {
    stations.push_back({"last-important", in.important_share, line_transfers * in.coherence_ns});
  }
  (void)workers;  // the insert locks are not a station: see ThroughputPerSecond
  return stations;
}

double MeanValueThroughput(std::span<const ModelStation> stations, double think_ns, int customers) {
  std::vector<double> queue(stations.size(), 0.0);
  std::vector<double> residence(stations.size(), 0.0);
  double throughput = 0;
  for (int n = 1; n <= customers; ++n) {
    double cycle = think_ns;
    for (size_t k = 0; k < stations.size(); ++k) {
      residence[k] = stations[k].service_ns * (1 + queue[k]);
      cycle += stations[k].visits * residence[k];
    }
    throughput = cycle > 0 ? n / cycle : 0;
    for (size_t k = 0; k < stations.size(); ++k) queue[k] = throughput * stations[k].visits * residence[k];
  }
  return throughput;
}

absl::StatusOr<ModelCalibration> CalibrateModel(const ModelInputs& inputs) {
  if (!(inputs.coherence_ns > 0)) return absl::InvalidArgumentError("the model needs a positive coherence latency");
  if (!(inputs.records_per_second_1 > 0) || !(inputs.records_per_second_2 > 0)) {
    return absl::InvalidArgumentError("the model needs positive 1- and 2-worker rates");
  }
  ModelCalibration c;
  c.inputs = inputs;
  c.cycle_ns_1 = 1e9 / inputs.records_per_second_1;
  const double target = inputs.records_per_second_2;
  // The 2-worker rate falls as a visit costs more transfers: bisection.
  if (!IsCentral(inputs.variant) || !(inputs.important_share > 0)) {
    c.reservation_transfers = Fit([&](double x) { return ThroughputPerSecond(inputs, x, 0, 2); }, target, c.clamped);
  } else if (inputs.reservation_transfers) {
    c.reservation_transfers = *inputs.reservation_transfers;
    c.line_transfers =
        Fit([&](double x) { return ThroughputPerSecond(inputs, c.reservation_transfers, x, 2); }, target, c.clamped);
  } else {
    c.line_transfers = c.reservation_transfers =
        Fit([&](double x) { return ThroughputPerSecond(inputs, x, x, 2); }, target, c.clamped);
  }
  return c;
}

double PredictRecordsPerSecond(const ModelCalibration& c, int workers) {
  if (workers <= 1) return c.inputs.records_per_second_1;
  return ThroughputPerSecond(c.inputs, c.reservation_transfers, c.line_transfers, workers);
}

}  // namespace backendlab::xlog
