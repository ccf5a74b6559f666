// The startup experiment: each catcache (bucket strategy) x syscache measured
// as a backend start (init of every cache, then the first queries), in-process
// or in forked children, in interleaved rounds; plus the zeroing of the same
// bytes on warm vs fresh pages, which splits palloc0's init cost into memset
// and page faults. `backendlab catcache` prints it; catcache_benchmark.cc
// times the same measured functions under Google Benchmark.
#ifndef BACKENDLAB_CATCACHE_STARTUP_EXPERIMENT_H_
#define BACKENDLAB_CATCACHE_STARTUP_EXPERIMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/names.h"
#include "base/summary.h"
#include "catcache/bucket_allocator.h"
#include "catcache/first_queries.h"
#include "catcache/syscache_profile.h"

namespace backendlab::catcache {

// Where a backend is measured. With fork on, `bss` gets two rows: a parent
// that never touched the region (the child's first writes are zero-fill
// faults) and one that wrote it (copy-on-write faults).
enum class Process { kInproc, kFork, kForkTouchedParent };
inline constexpr NamedValue<Process> kProcessNames[] = {
    {Process::kInproc, "inproc"}, {Process::kFork, "fork"}, {Process::kForkTouchedParent, "fork-touched-parent"}};
inline std::string_view ProcessName(Process p) { return NameOf(p, kProcessNames); }

struct StartupExperimentOptions {
  std::vector<BucketStrategy> catcaches;  // distinct
  std::vector<std::string> syscaches;     // distinct names of kSyscacheNames
  int64_t lookups = 5000;                 // first-query lookups per backend
  bool fork = false;                      // each backend a forked child
  int64_t rounds = 31;
};

// One backend's numbers. Plain data: a forked child writes it to shared memory.
struct BackendSample {
  double init_us = 0;
  double init_cpu_us = 0;
  double init_faults = 0;
  double queries_us = 0;
  double queries_faults = 0;
  int64_t rehashes = 0;
  double rehash_us = 0;
  int64_t entries = 0;
  int64_t hits = 0;
  int64_t initial_bucket_bytes = 0;
  int64_t bucket_bytes = 0;         // after the first queries
  int64_t context_held_bytes = 0;   // after the first queries
  int64_t memset_bytes_init = 0;
  int64_t kernel_zeroed_bytes_init = 0;
  int64_t bss_fallback_arrays = 0;  // after the first queries
};

// One configuration's figures over the rounds.
struct StartupRow {
  BucketStrategy catcache{};
  std::string syscache;
  Process process{};
  Summary init_us{};
  double init_cpu_us = 0;  // medians
  double init_faults = 0;
  Summary queries_us{};
  double queries_faults = 0;
  double rehash_us = 0;
  BackendSample last{};  // counts are deterministic for a configuration: the last round's
};

// Zeroing one syscache's initial bucket bytes outside any cache, medians.
struct ZeroingFigures {
  std::string syscache;
  size_t bytes = 0;
  double warm_memset_us = 0;
  double fresh_pages_memset_us = 0;
  double fresh_pages_minor_faults = 0;
  double us_per_fault = 0;
  // Where palloc0's init goes, if palloc0 was measured: memset of warm memory
  // vs page faults priced by the fresh-pages memset.
  struct Palloc0Shares {
    double init_us = 0;
    double init_minor_faults = 0;
    double memset_share = 0;
    double fault_share = 0;
  };
  std::optional<Palloc0Shares> palloc0{};
};

// expansible against palloc0 for one syscache: what the small start saves,
// what the first queries then cost more. Medians.
struct ExpansibleVsPalloc0 {
  std::string syscache;
  double init_us_saved = 0;
  double queries_us_extra = 0;
  double rehash_us_extra = 0;
  int64_t extra_rehashes = 0;
};

struct StartupExperimentResult {
  std::vector<StartupRow> rows;  // syscaches outer, catcaches inner
  Process main_process = Process::kInproc;  // the process of the palloc0 and expansible figures
  std::vector<ZeroingFigures> zeroing;      // one per syscache
  std::vector<ExpansibleVsPalloc0> expansible_vs_palloc0;  // where both were measured
};

// Runs the experiment. InvalidArgument for an empty or duplicated list or an
// unknown syscache; Cancelled when a stop is requested (^C; a forked backend
// is killed and reaped first); another error if a backend fails.
absl::StatusOr<StartupExperimentResult> RunStartupExperiment(const StartupExperimentOptions& options);

// ---- The measured functions, shared with the benchmark -----------------------

// One backend in this process: init every cache (timed), then the first
// queries (timed), then teardown (not timed). An empty `lookups` measures init.
absl::StatusOr<BackendSample> MeasureBackend(BucketStrategy catcache, const SyscacheProfile& syscache,
                                             const std::vector<Lookup>& lookups);

// Zeroing `bytes`: a memset of memory already faulted in (`warm`, of that
// size) and one of fresh anonymous pages with the faults it takes.
struct ZeroSample {
  double warm_us = 0;
  double fresh_us = 0;
  double fresh_faults = 0;
};
absl::StatusOr<ZeroSample> MeasureZeroing(std::vector<char>& warm);

}  // namespace backendlab::catcache

#endif  // BACKENDLAB_CATCACHE_STARTUP_EXPERIMENT_H_
