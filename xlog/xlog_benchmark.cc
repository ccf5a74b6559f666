// Micro-benchmarks of the insert path and the reader: one measurement window
// of the xlog experiment per iteration (its own measured function,
// xlog/xlog_experiment.h), and the reader alone on an idle WAL.
#include <cstddef>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "xlog/tracker_dispatch.h"
#include "xlog/wal.h"
#include "xlog/xlog_experiment.h"

namespace backendlab::xlog {
namespace {

std::span<std::byte> Ring() {
  static std::vector<std::byte>* ring = new std::vector<std::byte>(kRingBytes, std::byte{0});
  return *ring;
}

// Workers insert for 20 ms windows; manual time is the window. Counters:
// records per second over all workers, and the reader's ns per call.
void BM_Insert(benchmark::State& state, Tracker variant, ReaderRate reader) {
  XlogConfig c;
  c.variant = variant;
  c.workers = static_cast<int>(state.range(0));
  c.record_size = static_cast<uint32_t>(state.range(1));
  c.reader = reader;
  c.duration = absl::Milliseconds(20);
  double inserts = 0, reader_ns = 0;
  int64_t windows = 0;
  for (auto _ : state) {
    absl::StatusOr<XlogSample> s = MeasureXlogOnce(c, Ring(), static_cast<uint64_t>(windows) + 1);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.status().message()).c_str());
      break;
    }
    state.SetIterationTime(s->seconds);
    inserts += static_cast<double>(s->inserts);
    reader_ns += s->reader_ns > 0 ? s->reader_ns : 0;
    ++windows;
  }
  state.counters["records_per_second"] = benchmark::Counter(inserts, benchmark::Counter::kIsRate);
  if (reader != ReaderRate::kOff && windows > 0) state.counters["reader_ns"] = reader_ns / static_cast<double>(windows);
}

void InsertArgs(benchmark::internal::Benchmark* b) {
  for (int workers : {1, 2}) {
    for (int size : {32, 200, 8192}) b->Args({workers, size});
  }
  b->ArgNames({"workers", "record_size"})->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_Insert, per_lock, Tracker::kPerLock, ReaderRate::kOff)->Apply(InsertArgs);
BENCHMARK_CAPTURE(BM_Insert, central_spinlock, Tracker::kCentralSpinlock, ReaderRate::kOff)->Apply(InsertArgs);
BENCHMARK_CAPTURE(BM_Insert, central_atomic, Tracker::kCentralAtomic, ReaderRate::kOff)->Apply(InsertArgs);
BENCHMARK_CAPTURE(BM_Insert, per_lock_atomic, Tracker::kPerLockAtomic, ReaderRate::kOff)->Apply(InsertArgs);
BENCHMARK_CAPTURE(BM_Insert, per_lock_reader_max, Tracker::kPerLock, ReaderRate::kMax)->Args({2, 32})->UseManualTime();
BENCHMARK_CAPTURE(BM_Insert, per_lock_atomic_reader_max, Tracker::kPerLockAtomic, ReaderRate::kMax)->Args({2, 32})->UseManualTime();

// GetLastImportantRecPtr with no inserter running: the reader's floor.
template <LastImportantTracker T>
void BM_ReadIdle(benchmark::State& state) {
  Wal<T> wal(static_cast<int>(state.range(0)), Ring());
  for (auto _ : state) benchmark::DoNotOptimize(wal.LastImportant());
}
BENCHMARK_TEMPLATE(BM_ReadIdle, PerLock)->Arg(8)->Arg(64);
BENCHMARK_TEMPLATE(BM_ReadIdle, CentralSpinlock)->Arg(8);
BENCHMARK_TEMPLATE(BM_ReadIdle, CentralAtomic)->Arg(8);
BENCHMARK_TEMPLATE(BM_ReadIdle, PerLockAtomic)->Arg(8)->Arg(64);

}  // namespace
}  // namespace backendlab::xlog
