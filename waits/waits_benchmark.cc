// The two experiments of waits/ as Google Benchmark cases: each case is one
// short run of the experiment itself (forked processes, so real time), and
// the time it reports is the run's time per round trip (manual time: 1 /
// round trips per second). For interleaved rounds and medians, use
// `backendlab latch` and `backendlab waits`.
#include <string>

#include "benchmark/benchmark.h"
#include "waits/latch_experiment.h"
#include "waits/waits_experiment.h"

namespace backendlab::waits {
namespace {

constexpr int64_t kRunMs = 100;

void BM_LatchPingPong(benchmark::State& state) {
  LatchExperimentOptions options;
  options.latches = {kAllLatches[static_cast<size_t>(state.range(0))]};
  options.rounds = 1;
  options.duration = absl::Milliseconds(kRunMs);
  options.count_syscalls = false;
  options.busy_sets = 2000;
  state.SetLabel(std::string(LatchName(options.latches[0])));
  for (auto _ : state) {
    absl::StatusOr<LatchExperimentResult> r = RunLatchExperiment(options);
    if (!r.ok() || r->rows.empty() || r->rows[0].round_trips_per_second.median <= 0) {
      state.SkipWithError(r.ok() ? "no round trip measured" : std::string(r.status().message()).c_str());
      return;
    }
    state.SetIterationTime(1 / r->rows[0].round_trips_per_second.median);
    if (r->rows[0].busy_set_ns) state.counters["busy_set_ns"] = *r->rows[0].busy_set_ns;
  }
}
BENCHMARK(BM_LatchPingPong)->DenseRange(0, static_cast<int>(std::size(kAllLatches)) - 1)->Iterations(1)->UseManualTime();

// Arguments: the strategy's index in kAllWaitStrategies, the pairs.
void BM_WaitRoundTrip(benchmark::State& state) {
  WaitsExperimentOptions options;
  options.strategies = {kAllWaitStrategies[static_cast<size_t>(state.range(0))]};
  options.pairs = {static_cast<int>(state.range(1))};
  options.rounds = 1;
  options.duration = absl::Milliseconds(kRunMs);
  options.count_syscalls = false;
  state.SetLabel(std::string(WaitStrategyName(options.strategies[0])));
  for (auto _ : state) {
    absl::StatusOr<WaitsExperimentResult> r = RunWaitsExperiment(options);
    if (!r.ok() || r->rows.empty() || r->rows[0].round_trips_per_second.median <= 0) {
      state.SkipWithError(r.ok() ? "no round trip measured" : std::string(r.status().message()).c_str());
      return;
    }
    // All pairs together: the time per round trip of the whole machine.
    state.SetIterationTime(1 / r->rows[0].round_trips_per_second.median);
    state.counters["sys_us"] = r->rows[0].sys_us;
  }
}
BENCHMARK(BM_WaitRoundTrip)
    ->ArgsProduct({benchmark::CreateDenseRange(0, static_cast<int>(std::size(kAllWaitStrategies)) - 1, 1), {1, 4}})
    ->Iterations(1)
    ->UseManualTime();

}  // namespace
}  // namespace backendlab::waits
