// Connect/disconnect loops against a mock postmaster, like `pgbench -C`: the
// `fork` mode forks a postmaster that listens on a Unix socket in a private
// temporary directory and forks one backend per connection; the `inproc` mode
// runs the same backend lifecycle in this process, without fork or socket.
#ifndef BACKENDLAB_LIFECYCLE_CYCLE_H_
#define BACKENDLAB_LIFECYCLE_CYCLE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lifecycle/backend.h"
#include "lifecycle/backend_record.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle {

enum class Mode { kFork, kInproc };
std::string_view ModeName(Mode mode);
absl::StatusOr<Mode> ParseMode(std::string_view name);

struct CycleOptions {
  Mode mode = Mode::kFork;
  BackendConfig backend;
  int clients = 1;
  int64_t connections = 200;  // measured connections; 0: run for duration_ms instead
  int64_t duration_ms = 0;
  int64_t warmup = 20;        // connections run first and left out of every figure
  int baseline_forks = 100;   // bare fork+_exit+waitpid cycles, before and after the run
  // Profile the measured part of the run: the postmaster and every measured
  // backend (fork mode) or this process (inproc), samples tagged with
  // SampleTagName()s. Unset: no timer, no handler, nothing to pay.
  std::optional<profiling::SamplerOptions> sampler;
  // Called now and then with a one-line status (for a progress line).
  std::function<void(const std::string&)> progress;
};

struct CycleResult {
  std::vector<BackendRecord> records;      // measured backends, crashed ones included
  std::vector<int64_t> connect_latency_ns; // connect() -> "ready" received, measured clients
  int64_t connections = 0;                 // measured connections that reached "ready"
  int64_t failed_connections = 0;          // closed by the server side before "ready"
  int64_t wall_ns = 0;                     // the measured part of the run
  std::vector<int64_t> baseline_fork_ns;   // bare fork+exit+wait, same process as the forks
  absl::Status syscalls = absl::OkStatus();  // why syscall counts are missing, if they are
  std::vector<absl::Status> counters_unavailable;  // why each missing --counters event is missing
  bool interrupted = false;                // SIGINT arrived: the run stopped early, cleanly
  bool postmaster_gone = false;            // it stopped talking before being told to stop
  std::vector<BackendRecord> warmup_records_failed;  // warm-up backends that crashed: not figures, still failures
  std::string socket_dir;                  // where the socket was (gone when this returns)
  // With options.sampler: the samples of the measured backends and of the
  // postmaster (warm-up backends left out), unsymbolized.
  std::vector<profiling::RawSample> samples;
  int64_t samples_dropped = 0;    // samples lost to a full buffer
  int64_t samples_truncated = 0;  // samples whose stack was cut at profiling::kMaxFrames
  absl::Status samples_status = absl::OkStatus();  // not OK: the sample file was damaged; `samples` holds what was read
  // Fork mode: the postmaster's pid, to tell its samples (its fork() calls
  // are tagged `fork`) from the backends'.
  int32_t postmaster_pid = 0;
};

// Runs the loop. Usage errors are InvalidArgument; a run that cannot set up
// (temp dir, bind, fork, mmap) is another error. Every child is reaped and the
// socket and directory are removed before it returns, on every path.
absl::StatusOr<CycleResult> RunCycle(const CycleOptions& options);

// Validates options without running anything (the CLI's bad-input checks).
absl::Status ValidateCycleOptions(const CycleOptions& options);

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_CYCLE_H_
