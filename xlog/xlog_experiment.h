// The xlog experiment: each variant x workers x record size x reader rate x
// insert locks measured in interleaved rounds (records/s, insert latency, the
// reader's cost per call), same-run ratios to `per-lock`, the coherence
// latency of this machine, and the contention model calibrated on the 1- and
// 2-worker rows. `backendlab xlog` prints it; xlog_benchmark.cc times the same
// measured function under Google Benchmark.
#ifndef BACKENDLAB_XLOG_XLOG_EXPERIMENT_H_
#define BACKENDLAB_XLOG_XLOG_EXPERIMENT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/names.h"
#include "base/statistics.h"
#include "base/summary.h"
#include "xlog/contention_model.h"
#include "xlog/last_important.h"

namespace backendlab::xlog {

// How often GetLastImportantRecPtr is called while the inserters run: never;
// at the bgwriter's cadence (LOG_SNAPSHOT_INTERVAL_MS: once per 15 s); at
// 100 Hz; flat out, one call after another.
enum class ReaderRate { kOff, kBgwriter, k100Hz, kMax };
inline constexpr NamedValue<ReaderRate> kReaderRateNames[] = {
    {ReaderRate::kOff, "off"}, {ReaderRate::kBgwriter, "bgwriter"}, {ReaderRate::k100Hz, "100hz"}, {ReaderRate::kMax, "max"}};
inline constexpr auto kAllReaderRates = ValuesOf(kReaderRateNames);
std::string_view ReaderRateName(ReaderRate rate);
absl::StatusOr<ReaderRate> ParseReaderRate(std::string_view name);
// Calls per second; 0 for off, infinity for max.
double ReaderCallsPerSecond(ReaderRate rate);

inline constexpr uint32_t kMaxRecordSize = uint32_t{1} << 20;
inline constexpr int kMaxWorkers = 256;
inline constexpr int kMaxLocks = 1024;
// The shared ring of the measurements: 16 MiB, wal_buffers' largest automatic
// size (1/32 of shared_buffers, capped at 16 MB).
inline constexpr size_t kRingBytes = size_t{16} << 20;

struct XlogExperimentOptions {
  std::vector<Tracker> variants;
  std::vector<int> workers;             // each 1 .. kMaxWorkers
  std::vector<uint32_t> record_sizes;   // multiples of 8, 8 .. kMaxRecordSize
  std::vector<ReaderRate> readers;
  std::vector<int> locks;               // each 1 .. kMaxLocks
  std::vector<int> model_workers;       // the model's points, each 2 .. 100000
  int unimportant_percent = 10;
  int64_t rounds = 7;
  absl::Duration window = absl::Milliseconds(60);  // one measurement window
};

// One configuration, as the experiment and the benchmark run it.
struct XlogConfig {
  Tracker variant{};
  int workers = 1;
  uint32_t record_size = 32;
  ReaderRate reader = ReaderRate::kOff;
  int locks = 8;
  int unimportant_percent = 10;
  absl::Duration duration = absl::Milliseconds(60);  // the window
};

// One measurement window of one configuration.
struct XlogSample {
  double seconds = 0;
  int64_t inserts = 0;
  int64_t contended = 0;  // insert-lock acquires that had to wait
  double records_per_second = 0;
  double insert_p50_ns = 0, insert_p99_ns = 0;  // one insert in 16 timed, net of the clock
  int64_t reader_calls = 0;
  double reader_ns = -1;  // median per call; < 0 when there was no call
  // The clock's own cost (the least of back-to-back readings), taken off
  // every timing above: a flat-out per-lock-atomic read costs less than it.
  double clock_ns = 0;
};

// Runs one window: the workers insert for config.duration, worker i on
// CPU i mod the CPUs allowed, while the reader calls at its rate. `ring` is the WAL's buffer (kRingBytes, a power
// of two, touched beforehand). `seed` picks the unimportant records and the
// reader's phase. An error if a thread cannot be started.
absl::StatusOr<XlogSample> MeasureXlogOnce(const XlogConfig& config, std::span<std::byte> ring, uint64_t seed);

// The CPUs this process may run on (its affinity mask): worker i of a
// window runs on the (i mod this)-th of them.
int AllowedCpuCount();

// One cache line handed back and forth between two threads pinned to two
// CPUs: ns per one-way transfer. FailedPrecondition with fewer than two CPUs.
absl::StatusOr<double> MeasureCoherenceLatencyNs(int64_t round_trips);

struct XlogRow {
  XlogConfig config;
  Summary records_per_second{};  // over the rounds
  double insert_p50_ns = 0, insert_p99_ns = 0;  // medians over the rounds
  std::optional<double> reader_ns{};            // median over the rounds that made a call
  double reader_calls_per_second = 0;
  double contended_share = 0;  // waits per insert-lock acquire
  // Each round's figures, in round order, for the paired ratios; a round
  // whose reader made no call has reader_ns 0 there.
  std::vector<double> records_per_second_by_round, insert_p99_ns_by_round, reader_ns_by_round;
  // Paired ratios over the rounds (base/statistics.h): this row over
  // `per-lock`'s (or the reader-off row's) in the same round. Absent where
  // that row was not measured or no round has both figures; a row against
  // itself is exactly 1, without an interval.
  std::optional<RatioEstimate> records_vs_per_lock{}, p99_vs_per_lock{}, reader_vs_per_lock{};
  std::optional<RatioEstimate> records_vs_reader_off{};
};

struct ModelPoint {
  int workers = 0;
  double records_per_second = 0;
  // The model's prediction over per-lock's: a quotient of two predictions
  // from medians, not a measurement, so it has no interval.
  std::optional<double> vs_per_lock{};
};

struct ModelRow {
  uint32_t record_size = 0;
  ModelCalibration calibration;
  std::vector<ModelPoint> points;  // in the order of model_workers
};

struct XlogExperimentResult {
  std::vector<XlogRow> rows;  // locks, record sizes, workers, readers, variants: outer to inner
  std::optional<Summary> coherence_ns{};  // over the rounds; absent if it could not be measured
  double clock_ns = 0;                    // median over every window of XlogSample::clock_ns
  std::vector<ModelRow> model;  // variants x record sizes x locks with 1 and 2 workers, reader off
  std::string model_missing;              // why there is no model, when `model` is empty
};

// Runs the experiment. InvalidArgument for an empty or duplicated list or a
// value out of range; Cancelled on a stop request (no partial table).
absl::StatusOr<XlogExperimentResult> RunXlogExperiment(const XlogExperimentOptions& options);

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_XLOG_EXPERIMENT_H_
