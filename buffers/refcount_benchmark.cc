// Micro-benchmarks of the refcount layouts: pin/unpin, a backend's whole table
// lifetime (fresh allocation + exit check, with page faults), and warm scans
// beside a streaming-read baseline.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "buffers/exit_check.h"
#include "buffers/layout_dispatch.h"
#include "buffers/scan_kernels.h"
#include "buffers/shared_buffers.h"
#include "base/resource_usage.h"

namespace backendlab::buffers {
namespace {

// shared_buffers sizes of the lifetime and scan cases, as NBuffers.
constexpr int64_t kNBuffers128MB = (int64_t{128} << 20) / kBlockSize;
constexpr int64_t kNBuffers1GB = (int64_t{1} << 30) / kBlockSize;
constexpr int64_t kNBuffers8GB = (int64_t{8} << 30) / kBlockSize;
constexpr int64_t kNBuffers32GB = (int64_t{32} << 30) / kBlockSize;

std::vector<BufferId> DistinctBuffers(size_t count, uint32_t nbuffers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<BufferId> pick(0, nbuffers - 1);
  std::vector<BufferId> out;
  while (out.size() < count) {
    BufferId b = pick(rng);
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  }
  return out;
}

template <RefCountTable T>
T MustCreate(benchmark::State& state, uint32_t nbuffers) {
  absl::StatusOr<T> table = T::Create(nbuffers);
  if (!table.ok()) state.SkipWithError(std::string(table.status().message()).c_str());
  return *std::move(table);
}

// Pin k distinct buffers, then unpin them: at the peak k are held, as in a
// scan that keeps a few pages pinned. With k > 8 the `hash` layout overflows.
template <RefCountTable T>
void BM_PinUnpinHeld(benchmark::State& state) {
  const uint32_t nbuffers = kNBuffers1GB;
  const auto held = static_cast<size_t>(state.range(0));
  T table = MustCreate<T>(state, nbuffers);
  const std::vector<BufferId> buffers = DistinctBuffers(held, nbuffers, 42);
  for (auto _ : state) {
    for (BufferId b : buffers) {
      if (!table.Pin(b).ok()) state.SkipWithError("pin failed");
    }
    for (BufferId b : buffers) {
      if (!table.Unpin(b).ok()) state.SkipWithError("unpin failed");
    }
  }
  // Seconds per pin+unpin pair (shown with an SI prefix: "2.1n" is 2.1 ns).
  state.counters["per_pair"] = benchmark::Counter(
      static_cast<double>(state.iterations() * held), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK_TEMPLATE(BM_PinUnpinHeld, ArrayRefCount)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK_TEMPLATE(BM_PinUnpinHeld, ByteRefCount)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK_TEMPLATE(BM_PinUnpinHeld, HashRefCount)->Arg(1)->Arg(8)->Arg(64);

// One pin+unpin at a time of buffers spread over all of NBuffers: the `array`
// and `bytes` layouts pay cache misses that grow with the table.
template <RefCountTable T>
void BM_PinUnpinRandom(benchmark::State& state) {
  const auto nbuffers = static_cast<uint32_t>(state.range(0));
  T table = MustCreate<T>(state, nbuffers);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<BufferId> pick(0, nbuffers - 1);
  std::vector<BufferId> buffers(4096);
  for (BufferId& b : buffers) b = pick(rng);
  size_t i = 0;
  for (auto _ : state) {
    BufferId b = buffers[i++ & 4095];
    if (!table.Pin(b).ok() || !table.Unpin(b).ok()) state.SkipWithError("pin/unpin failed");
  }
}
BENCHMARK_TEMPLATE(BM_PinUnpinRandom, ArrayRefCount)->Arg(kNBuffers1GB)->Arg(kNBuffers32GB);
BENCHMARK_TEMPLATE(BM_PinUnpinRandom, ByteRefCount)->Arg(kNBuffers1GB)->Arg(kNBuffers32GB);
BENCHMARK_TEMPLATE(BM_PinUnpinRandom, HashRefCount)->Arg(kNBuffers1GB)->Arg(kNBuffers32GB);

// A backend's whole table: allocate fresh, pin and unpin a few buffers, run the
// exit check under a policy, free. Real time, and minor faults per backend,
// because the cost of a fresh calloc'd table is in faulting its pages.
template <RefCountTable T>
void BM_TableLifetime(benchmark::State& state) {
  const auto nbuffers = static_cast<uint32_t>(state.range(0));
  const auto policy = static_cast<ExitCheckPolicy>(state.range(1));
  const std::vector<BufferId> touched = DistinctBuffers(4, nbuffers, 1);
  size_t bytes = 0;
  const ResourceSample before = SampleSelf();
  for (auto _ : state) {
    T table = MustCreate<T>(state, nbuffers);
    for (BufferId b : touched) (void)table.Pin(b);
    for (BufferId b : touched) (void)table.Unpin(b);
    ExitCheckResult result = RunExitCheck(table, policy, ScanKernel::kSimd);
    if (!result.leaks.empty()) state.SkipWithError("unexpected leak");
    bytes = table.MemoryBytes();
  }
  const ResourceSample used = SampleSelf() - before;
  state.counters["minor_faults"] = benchmark::Counter(static_cast<double>(used.minor_faults),
                                                      benchmark::Counter::kAvgIterations);
  state.counters["bytes_per_backend"] = static_cast<double>(bytes);
  state.SetLabel(std::string(ExitCheckPolicyName(policy)));
}
void LifetimeArgs(benchmark::internal::Benchmark* b) {
  for (int64_t n : {kNBuffers128MB, kNBuffers1GB, kNBuffers8GB, kNBuffers32GB}) {
    for (ExitCheckPolicy p : kAllExitCheckPolicies) b->Args({n, static_cast<int64_t>(p)});
  }
  b->ArgNames({"nbuffers", "policy"})->UseRealTime();
}
BENCHMARK_TEMPLATE(BM_TableLifetime, ArrayRefCount)->Apply(LifetimeArgs);
BENCHMARK_TEMPLATE(BM_TableLifetime, ByteRefCount)->Apply(LifetimeArgs);
BENCHMARK_TEMPLATE(BM_TableLifetime, HashRefCount)->Apply(LifetimeArgs);

// Warm scans: the table is already faulted in, so this is the kernel against
// memory bandwidth. Bytes/s beside BM_StreamingRead over the same sizes.
template <typename Element>
void BM_WarmScan(benchmark::State& state) {
  const auto kernel = static_cast<ScanKernel>(state.range(0));
  const auto nbuffers = static_cast<size_t>(state.range(1));
  std::vector<Element> table(nbuffers, 0);  // value-initialised: every page written
  for (auto _ : state) {
    size_t hit = FindNonZero(kernel, table.data(), table.size());
    benchmark::DoNotOptimize(hit);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * nbuffers * sizeof(Element)));
  state.SetLabel(kernel == ScanKernel::kSimd ? std::string("simd=") + std::string(SimdImplementationName())
                                             : std::string(ScanKernelName(kernel)));
}
void ScanArgs(benchmark::internal::Benchmark* b) {
  for (int64_t n : {kNBuffers128MB, kNBuffers1GB, kNBuffers8GB, kNBuffers32GB}) {
    for (ScanKernel k : kAllScanKernels) b->Args({static_cast<int64_t>(k), n});
  }
  b->ArgNames({"kernel", "nbuffers"});
}
BENCHMARK_TEMPLATE(BM_WarmScan, int32_t)->Apply(ScanArgs);
BENCHMARK_TEMPLATE(BM_WarmScan, uint8_t)->Apply(ScanArgs);

void BM_StreamingRead(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> data(bytes, 0);
  for (auto _ : state) benchmark::DoNotOptimize(StreamingRead(data.data(), data.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_StreamingRead)
    ->Arg(kNBuffers128MB)->Arg(kNBuffers128MB * 4)
    ->Arg(kNBuffers1GB)->Arg(kNBuffers1GB * 4)
    ->Arg(kNBuffers8GB)->Arg(kNBuffers8GB * 4)
    ->Arg(kNBuffers32GB)->Arg(kNBuffers32GB * 4)
    ->ArgName("bytes");

}  // namespace
}  // namespace backendlab::buffers
