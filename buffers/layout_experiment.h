// The layout experiment: each refcount layout x shared_buffers size measured
// in interleaved rounds: bytes per backend, pin+unpin cost, the exit check of
// a fresh table with its page faults, and the warm scan against a streaming
// read. `backendlab layouts` prints it; refcount_benchmark.cc times the same
// measured functions under Google Benchmark.
#ifndef BACKENDLAB_BUFFERS_LAYOUT_EXPERIMENT_H_
#define BACKENDLAB_BUFFERS_LAYOUT_EXPERIMENT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/compiler.h"
#include "base/resource_usage.h"
#include "base/summary.h"
#include "buffers/exit_check.h"
#include "buffers/refcount_table.h"
#include "buffers/scan_kernels.h"
#include "base/statistics.h"
#include "buffers/shared_buffers.h"

namespace backendlab::buffers {

// Distinct buffers held at the peak of the pin+unpin timings.
inline constexpr int kHeldCounts[] = {1, 8, 64};
// Distinct buffers of the `random` timing: 64 Ki cache lines of `array` at
// the larger sizes, more than this machine's L2 holds.
inline constexpr size_t kRandomBuffers = 65536;
// Touched by the "few pins" of a fresh backend before it exits.
inline constexpr int kFreshPins = 4;

struct LayoutExperimentOptions {
  std::vector<SharedBuffers> sizes;  // distinct NBuffers
  std::vector<Layout> layouts;       // distinct
  ScanKernel kernel = ScanKernel::kSimd;
  int64_t rounds = 15;
};

// One configuration's figures, medians over the rounds.
struct LayoutRow {
  Layout layout{};
  SharedBuffers size{};
  size_t bytes_per_backend = 0;
  std::array<double, std::size(kHeldCounts)> pin_unpin_ns{};  // per pair, by kHeldCounts
  double pin_unpin_ns_random = 0;
  Summary exit_check_us{};  // the exit check (policy always) of a fresh table
  double exit_minor_faults = 0;
  double lifetime_us = 0;  // allocate + pins + exit check + free
  double lifetime_minor_faults = 0;
  std::optional<double> scan_gbps{};  // absent for `hash`, which has no scan
  std::optional<double> read_baseline_gbps{};
};

// A ratio between two layouts at each size where both were measured, e.g.
// "exit_check_array_over_hash": A over B within each round, summarised over
// the rounds with a 95 % interval and a verdict (base/statistics.h; each
// figure is a cost, so a ratio below 1 is `faster`).
struct LayoutRatio {
  std::string name;
  std::vector<std::pair<SharedBuffers, RatioEstimate>> by_size;  // in the order of the sizes
};

struct LayoutExperimentResult {
  std::vector<LayoutRow> rows;  // sizes outer, layouts inner, in the options' order
  std::vector<LayoutRatio> ratios;
};

// Runs the experiment. InvalidArgument for an empty or duplicated list;
// Cancelled when a stop is requested (^C); another error if a table fails.
absl::StatusOr<LayoutExperimentResult> RunLayoutExperiment(const LayoutExperimentOptions& options);

// ---- The measured functions, shared with the benchmark -----------------------

// `count` distinct buffers spread over [0, nbuffers), the same for a seed.
std::vector<BufferId> SpreadBuffers(int count, uint32_t nbuffers, uint64_t seed);

// Pins every buffer of `buffers`, then unpins them, `pairs_per_buffer` times:
// with buffers.size() held at the peak. False if a pin or unpin failed.
template <RefCountTable T>
bool PinUnpinHeld(T& table, std::span<const BufferId> buffers, int64_t pairs_per_buffer) {
  bool ok = true;
  for (int64_t r = 0; r < pairs_per_buffer; ++r) {
    for (BufferId b : buffers) ok &= table.Pin(b).ok();
    CompilerBarrier();
    for (BufferId b : buffers) ok &= table.Unpin(b).ok();
    CompilerBarrier();
  }
  return ok;
}

// One backend's table from birth to exit.
struct FreshBackend {
  int64_t exit_check_ns = 0;  // the exit check alone: only the clock inside it
  int64_t exit_minor_faults = 0;
  ResourceSample lifetime;  // allocate + pins + exit check + free
  size_t bytes = 0;
};

// A fresh table of `nbuffers`: allocated, `touched` pinned and unpinned, the
// exit check run under `policy` with `kernel`, freed. An error if the table
// cannot be created or the check finds a leak in the clean table.
template <RefCountTable T>
absl::StatusOr<FreshBackend> RunFreshBackend(uint32_t nbuffers, std::span<const BufferId> touched,
                                             ExitCheckPolicy policy, ScanKernel kernel) {
  FreshBackend f;
  const ResourceSample start = SampleSelf();
  {
    absl::StatusOr<T> table = T::Create(nbuffers);
    if (!table.ok()) return table.status();
    for (BufferId b : touched) (void)table->Pin(b);
    for (BufferId b : touched) (void)table->Unpin(b);
    const ResourceSample before_check = SampleSelf();
    // Only the clock inside the interval: a getrusage would cost more than
    // the whole `hash` check.
    const int64_t t0 = NowNs();
    ExitCheckResult result = RunExitCheck(*table, policy, kernel);
    f.exit_check_ns = NowNs() - t0;
    f.exit_minor_faults = (SampleSelf() - before_check).minor_faults;
    if (!result.leaks.empty()) return absl::InternalError("exit check found a leak in a clean table");
    f.bytes = table->MemoryBytes();
  }
  f.lifetime = SampleSelf() - start;
  return f;
}

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_LAYOUT_EXPERIMENT_H_
