// Past two cores, on paper: a small contention model of the insert path. It is
// a model, not a measurement, and everything that prints it says so.
//
// Each insert is a cycle through a closed queueing network: local work (the
// copy, the bookkeeping, the few instructions of each critical section: the
// "think time"), then each central cache line the variant touches, whose
// visits serialise. A visit to a central line costs c cache-line transfers of
// the coherence latency t measured on this machine (c = 1 if the line simply
// moves to the visitor; more when waiters pull it back and forth). The
// central lines are visited only under an insert lock, so at most L workers
// are among them: past L, the others wait for a lock and each insert also
// moves the lock's line. Throughput comes from exact mean-value analysis
// (Reiser and Lavenberg's) of min(N, L) workers.
//
// Calibration: the 1-worker rate gives the cycle time (no transfers: every
// line stays in the one core's cache); the 2-worker rate fixes the one free
// parameter, transfers per visit: for `per-lock` and `per-lock-atomic` those
// of the reservation; for the central variants those of their own line, the
// reservation's being `per-lock`'s (the same code) when it was measured.
#ifndef BACKENDLAB_XLOG_CONTENTION_MODEL_H_
#define BACKENDLAB_XLOG_CONTENTION_MODEL_H_

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "xlog/last_important.h"

namespace backendlab::xlog {

struct ModelStation {
  std::string name;   // "reservation", "last-important"
  double visits = 0;  // per insert
  double service_ns = 0;
};

struct ModelInputs {
  Tracker variant{};
  int locks = 8;
  double important_share = 0.9;  // of inserts: the central variants' visits to their line
  double coherence_ns = 0;       // one cache-line transfer between cores, measured
  double records_per_second_1 = 0;  // measured, one worker
  double records_per_second_2 = 0;  // measured, two workers
  // For a central variant: the reservation's transfers per visit, fitted on
  // `per-lock`. Absent: one figure is fitted for both of its lines.
  std::optional<double> reservation_transfers{};
};

struct ModelCalibration {
  ModelInputs inputs;
  double cycle_ns_1 = 0;              // 1e9 / records_per_second_1
  double reservation_transfers = 0;   // per visit to the reservation
  double line_transfers = 0;          // per visit to a central variant's own line (0 for the others)
  // The 2-worker rate was above what the cycle allows with no transfer at
  // all (two workers scaling perfectly): the transfers are clamped to 0.
  bool clamped = false;
};

// Visits per insert to central lines with one transfer each, as the code
// reads (the reservation; a central variant's own line once per important
// insert; with more workers than locks an insert lock's line): 1, 1.9, ...
double StructuralTransfersPerInsert(const ModelInputs& inputs, int workers);
// The same with the fitted transfers per visit.
double FittedTransfersPerInsert(const ModelCalibration& calibration, int workers);

// The stations of a variant, with given transfers per visit (the same for
// any number of workers: the insert locks bound how many visit them).
std::vector<ModelStation> ModelStations(const ModelInputs& inputs, double reservation_transfers,
                                        double line_transfers, int workers);

// Exact mean-value analysis: inserts per ns of `customers` workers cycling
// through `think_ns` of local work and `stations`.
double MeanValueThroughput(std::span<const ModelStation> stations, double think_ns, int customers);

// Fits the free transfers per visit to the 2-worker rate. InvalidArgument
// for a rate or latency that is not positive.
absl::StatusOr<ModelCalibration> CalibrateModel(const ModelInputs& inputs);

// The model's records/s for `workers` (>= 2; 1 gives the measured rate back).
double PredictRecordsPerSecond(const ModelCalibration& calibration, int workers);

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_CONTENTION_MODEL_H_
