// Micro-benchmarks of backend start-up in the catalog caches: init of every
// cache per strategy and profile, the first queries after it, and zeroing the
// same bytes on warm vs fresh pages. Real (manual) time throughout, because
// the cost under study is page faults, which CPU-time sampling of a loop
// would smear; minor faults per iteration are a user counter.
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/compiler.h"
#include "benchmark/benchmark.h"
#include "catcache/bucket_allocator.h"
#include "catcache/catcache.h"
#include "catcache/first_queries.h"
#include "catcache/syscache_profile.h"
#include "base/resource_usage.h"

namespace backendlab::catcache {
namespace {

const SyscacheProfile& Profile(int64_t index) {
  static const std::vector<SyscacheProfile> profiles = [] {
    std::vector<SyscacheProfile> out;
    for (const SyscacheName& p : kSyscacheNames) out.push_back(*BuiltinProfile(p.name));
    return out;
  }();
  return profiles[static_cast<size_t>(index)];
}

void Label(benchmark::State& state, BucketStrategy strategy, const SyscacheProfile& profile) {
  state.SetLabel(std::string(BucketStrategyName(strategy)) + "/" + profile.name);
}

// InitCatCache for every cache of a profile, as at backend start. Teardown
// is outside the timed interval.
void BM_Init(benchmark::State& state) {
  const auto strategy = kAllBucketStrategies[state.range(0)];
  const SyscacheProfile& profile = Profile(state.range(1));
  int64_t faults = 0;
  for (auto _ : state) {
    const ResourceSample before = SampleSelf();
    const int64_t t0 = NowNs();
    absl::StatusOr<std::unique_ptr<CatCacheSet>> set = CatCacheSet::Create(strategy, profile);
    const int64_t t1 = NowNs();
    faults += (SampleSelf() - before).minor_faults;
    if (!set.ok()) {
      state.SkipWithError(std::string(set.status().message()).c_str());
      break;
    }
    state.SetIterationTime(static_cast<double>(t1 - t0) / 1e9);
  }
  state.counters["minor_faults"] = benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
  Label(state, strategy, profile);
}

// The first queries after init: lookups with loads on miss and rehashes.
void BM_FirstQueries(benchmark::State& state) {
  const auto strategy = kAllBucketStrategies[state.range(0)];
  const SyscacheProfile& profile = Profile(state.range(1));
  const std::vector<Lookup> lookups = MakeFirstQueries(profile, state.range(2));
  int64_t faults = 0, rehashes = 0;
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<CatCacheSet>> set = CatCacheSet::Create(strategy, profile);
    if (!set.ok()) {
      state.SkipWithError(std::string(set.status().message()).c_str());
      break;
    }
    const ResourceSample before = SampleSelf();
    const int64_t t0 = NowNs();
    absl::StatusOr<FirstQueriesResult> result = RunFirstQueries(**set, lookups);
    const int64_t t1 = NowNs();
    faults += (SampleSelf() - before).minor_faults;
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    rehashes += (*set)->Stats().rehashes;
    state.SetIterationTime(static_cast<double>(t1 - t0) / 1e9);
  }
  state.counters["minor_faults"] = benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
  state.counters["rehashes"] = benchmark::Counter(static_cast<double>(rehashes), benchmark::Counter::kAvgIterations);
  Label(state, strategy, profile);
}

void StrategyProfileArgs(benchmark::internal::Benchmark* b) {
  for (int64_t s = 0; s < static_cast<int64_t>(std::size(kAllBucketStrategies)); ++s) {
    for (int64_t p = 0; p < static_cast<int64_t>(std::size(kSyscacheNames)); ++p) b->Args({s, p});
  }
  b->ArgNames({"strategy", "profile"})->UseManualTime();
}
void QueriesArgs(benchmark::internal::Benchmark* b) {
  for (int64_t s = 0; s < static_cast<int64_t>(std::size(kAllBucketStrategies)); ++s) {
    for (int64_t p = 0; p < static_cast<int64_t>(std::size(kSyscacheNames)); ++p) {
      for (int64_t n : {1000, 20000}) b->Args({s, p, n});
    }
  }
  b->ArgNames({"strategy", "profile", "lookups"})->UseManualTime();
}
BENCHMARK(BM_Init)->Apply(StrategyProfileArgs);
BENCHMARK(BM_FirstQueries)->Apply(QueriesArgs);

// memset of `bytes` already faulted in: what palloc0 costs without faults.
void BM_ZeroWarm(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<char> buffer(bytes, 1);
  for (auto _ : state) {
    std::memset(buffer.data(), 0, bytes);
    CompilerBarrier();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
// memset of `bytes` on fresh anonymous pages: the faults plus the memset.
void BM_ZeroFresh(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  int64_t faults = 0;
  for (auto _ : state) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      state.SkipWithError("mmap failed");
      break;
    }
    const ResourceSample before = SampleSelf();
    const int64_t t0 = NowNs();
    std::memset(p, 0, bytes);
    CompilerBarrier();
    const int64_t t1 = NowNs();
    faults += (SampleSelf() - before).minor_faults;
    munmap(p, bytes);
    state.SetIterationTime(static_cast<double>(t1 - t0) / 1e9);
  }
  state.counters["minor_faults"] = benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
// 9.0's and 17's total initial bucket bytes.
BENCHMARK(BM_ZeroWarm)->Arg(21824 * 8)->Arg(2444 * 8);
BENCHMARK(BM_ZeroFresh)->Arg(21824 * 8)->Arg(2444 * 8)->UseManualTime();

}  // namespace
}  // namespace backendlab::catcache
