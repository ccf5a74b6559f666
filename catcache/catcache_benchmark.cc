// Micro-benchmarks of backend start-up in the catalog caches: init of every
// cache per catcache and syscache, the first queries after it, and zeroing
// the same bytes on warm vs fresh pages. Each iteration is one call of the
// startup experiment's measured functions (catcache/startup_experiment.h),
// timed by their own clocks (manual time), because the cost under study is
// page faults, which CPU-time sampling of a loop would smear; minor faults
// per iteration are a user counter.
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "catcache/bucket_allocator.h"
#include "catcache/first_queries.h"
#include "catcache/startup_experiment.h"
#include "catcache/syscache_profile.h"

namespace backendlab::catcache {
namespace {

const SyscacheProfile& Syscache(int64_t index) {
  static const std::vector<SyscacheProfile> syscaches = [] {
    std::vector<SyscacheProfile> out;
    for (const NamedValue<std::string_view>& s : kSyscacheNames) out.push_back(*BuiltinProfile(s.name));
    return out;
  }();
  return syscaches[static_cast<size_t>(index)];
}

// One backend per iteration, init and first queries, as `backendlab catcache`
// measures it; the benchmark's time is init (lookups = 0) or the queries.
void BM_Backend(benchmark::State& state) {
  const auto catcache = kAllBucketStrategies[static_cast<size_t>(state.range(0))];
  const SyscacheProfile& syscache = Syscache(state.range(1));
  const int64_t lookups = state.range(2);
  const std::vector<Lookup> queries = MakeFirstQueries(syscache, lookups);
  double faults = 0;
  int64_t rehashes = 0;
  for (auto _ : state) {
    absl::StatusOr<BackendSample> s = MeasureBackend(catcache, syscache, queries);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.status().message()).c_str());
      break;
    }
    state.SetIterationTime((lookups == 0 ? s->init_us : s->queries_us) / 1e6);
    faults += lookups == 0 ? s->init_faults : s->queries_faults;
    rehashes += s->rehashes;
  }
  state.counters["minor_faults"] = benchmark::Counter(faults, benchmark::Counter::kAvgIterations);
  state.counters["rehashes"] = benchmark::Counter(static_cast<double>(rehashes), benchmark::Counter::kAvgIterations);
  state.SetLabel(std::string(BucketStrategyName(catcache)) + "/" + syscache.name +
                 (lookups == 0 ? " init" : " first queries"));
}
void BackendArgs(benchmark::internal::Benchmark* b) {
  for (int64_t c = 0; c < static_cast<int64_t>(std::size(kAllBucketStrategies)); ++c) {
    for (int64_t s = 0; s < static_cast<int64_t>(std::size(kSyscacheNames)); ++s) {
      for (int64_t n : {0, 1000, 20000}) b->Args({c, s, n});
    }
  }
  b->ArgNames({"catcache", "syscache", "lookups"})->UseManualTime();
}
BENCHMARK(BM_Backend)->Apply(BackendArgs);

// memset of a syscache's initial bucket bytes on warm memory and on fresh
// pages; the time is the fresh-pages memset, the warm one a counter.
void BM_Zeroing(benchmark::State& state) {
  std::vector<char> warm(static_cast<size_t>(state.range(0)), 1);
  double warm_us = 0, faults = 0;
  for (auto _ : state) {
    absl::StatusOr<ZeroSample> z = MeasureZeroing(warm);
    if (!z.ok()) {
      state.SkipWithError(std::string(z.status().message()).c_str());
      break;
    }
    state.SetIterationTime(z->fresh_us / 1e6);
    warm_us += z->warm_us;
    faults += z->fresh_faults;
  }
  state.counters["warm_memset_us"] = benchmark::Counter(warm_us, benchmark::Counter::kAvgIterations);
  state.counters["minor_faults"] = benchmark::Counter(faults, benchmark::Counter::kAvgIterations);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
// 9.0's and 17's total initial bucket bytes.
BENCHMARK(BM_Zeroing)->Arg(21824 * 8)->Arg(2444 * 8)->UseManualTime();

}  // namespace
}  // namespace backendlab::catcache
