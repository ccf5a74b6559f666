// Micro-benchmarks of the refcount layouts: pin/unpin, a backend's whole table
// lifetime (fresh allocation + exit check, with page faults), and warm scans
// beside a streaming-read baseline. The pin/unpin loop and the lifetime are
// the layout experiment's own measured functions (buffers/layout_experiment.h).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "buffers/exit_check.h"
#include "buffers/layout_dispatch.h"
#include "buffers/layout_experiment.h"
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
  const std::vector<BufferId> buffers = SpreadBuffers(static_cast<int>(held), nbuffers, 42);
  for (auto _ : state) {
    if (!PinUnpinHeld(table, buffers, 1)) state.SkipWithError("pin/unpin failed");
  }
  // Seconds per pin+unpin pair (shown with an SI prefix: "2.1n" is 2.1 ns).
  state.counters["per_pair"] = benchmark::Counter(
      static_cast<double>(state.iterations() * held), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK_TEMPLATE(BM_PinUnpinHeld, ArrayRefCount)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK_TEMPLATE(BM_PinUnpinHeld, ByteRefCount)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK_TEMPLATE(BM_PinUnpinHeld, HashRefCount)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK_TEMPLATE(BM_PinUnpinHeld, HashKeysRefCount)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK_TEMPLATE(BM_PinUnpinHeld, ArrayTouchedRefCount)->Arg(1)->Arg(8)->Arg(64);

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
BENCHMARK_TEMPLATE(BM_PinUnpinRandom, HashKeysRefCount)->Arg(kNBuffers1GB)->Arg(kNBuffers32GB);
BENCHMARK_TEMPLATE(BM_PinUnpinRandom, ArrayTouchedRefCount)->Arg(kNBuffers1GB)->Arg(kNBuffers32GB);

// A backend's whole table, as `backendlab layouts` measures it: allocate
// fresh, pin and unpin a few buffers, run the exit check under a policy, free.
// Manual time (the lifetime), and minor faults per backend, because the cost
// of a fresh calloc'd table is in faulting its pages.
template <RefCountTable T>
void BM_TableLifetime(benchmark::State& state) {
  const auto nbuffers = static_cast<uint32_t>(state.range(0));
  const auto policy = static_cast<ExitCheckPolicy>(state.range(1));
  const std::vector<BufferId> touched = SpreadBuffers(kFreshPins, nbuffers, 7);
  size_t bytes = 0;
  int64_t faults = 0;
  for (auto _ : state) {
    absl::StatusOr<FreshBackend> fresh = RunFreshBackend<T>(nbuffers, touched, policy, ScanKernel::kSimd);
    if (!fresh.ok()) {
      state.SkipWithError(std::string(fresh.status().message()).c_str());
      break;
    }
    state.SetIterationTime(static_cast<double>(fresh->lifetime.wall_ns) / 1e9);
    faults += fresh->lifetime.minor_faults;
    bytes = fresh->bytes;
  }
  state.counters["minor_faults"] = benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
  state.counters["bytes_per_backend"] = static_cast<double>(bytes);
  state.SetLabel(std::string(ExitCheckPolicyName(policy)));
}
void LifetimeArgs(benchmark::internal::Benchmark* b) {
  for (int64_t n : {kNBuffers128MB, kNBuffers1GB, kNBuffers8GB, kNBuffers32GB}) {
    for (ExitCheckPolicy p : kAllExitCheckPolicies) b->Args({n, static_cast<int64_t>(p)});
  }
  b->ArgNames({"nbuffers", "policy"})->UseManualTime();
}
BENCHMARK_TEMPLATE(BM_TableLifetime, ArrayRefCount)->Apply(LifetimeArgs);
BENCHMARK_TEMPLATE(BM_TableLifetime, ByteRefCount)->Apply(LifetimeArgs);
BENCHMARK_TEMPLATE(BM_TableLifetime, HashRefCount)->Apply(LifetimeArgs);
BENCHMARK_TEMPLATE(BM_TableLifetime, HashKeysRefCount)->Apply(LifetimeArgs);
BENCHMARK_TEMPLATE(BM_TableLifetime, ArrayTouchedRefCount)->Apply(LifetimeArgs);

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
