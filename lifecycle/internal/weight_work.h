// The physical work of a backend weight profile (backend_weight.h): what is
// made once before any fork (the file a backend reads, the CPU loop's rate),
// what the postmaster does (its pages, its libraries, its random bytes
// before each fork), and a phase's work in a backend. Not for other modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_WEIGHT_WORK_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_WEIGHT_WORK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/private_dir.h"
#include "lifecycle/backend_weight.h"

namespace backendlab::lifecycle::internal {

// Made in the tool before the postmaster is forked, shared (read-only) by
// every backend: a private directory with the file the backends read, the
// libraries loaded (dlopen, in the tool: the postmaster and every backend
// inherit them, as a real server is linked with them; a library that cannot
// be loaded is an error before anything runs), RAND_bytes found, and how
// many turns of the CPU loop make a microsecond here. The directory and the
// file are removed when the last copy goes (in the tool).
class WeightSupport {
 public:
  static absl::StatusOr<std::shared_ptr<const WeightSupport>> Prepare(const BackendWeight& weight);
  ~WeightSupport();
  WeightSupport(const WeightSupport&) = delete;
  WeightSupport& operator=(const WeightSupport&) = delete;

  const BackendWeight& weight() const { return weight_; }
  const std::string& file_path() const { return file_path_; }
  double loop_turns_per_us() const { return turns_per_us_; }

 private:
  WeightSupport() = default;
  BackendWeight weight_;
  PrivateDir dir_;          // removed by the process that made it only
  std::string file_path_;  // empty when no phase reads a file
  double turns_per_us_ = 0;
};

// In the postmaster, before it accepts: its pages touched (the libraries
// were loaded by the tool, in Prepare, before the postmaster was forked).
absl::Status PreparePostmaster(const WeightSupport& support);
// In the postmaster, before each fork: the random bytes.
void WeightBeforeFork(const WeightSupport& support);

// A phase's work in a backend. Touched pages stay mapped until the process
// exits, as a backend's memory does, or until ReleaseWeightPages.
absl::Status RunPhaseWeight(const WeightSupport& support, const PhaseWeight& phase);
// Gives back the pages this thread's RunPhaseWeight calls touched: a
// backend thread's teardown, which has no process exit to free them.
void ReleaseWeightPages();

// An `exit` exit path's work, in the backend at the end of teardown: what
// libc's exit() runs before the process ends — every atexit and
// __cxa_atexit handler, the dynamic loader's _dl_fini with every library's
// destructors (glibc's __cxa_finalize(NULL) runs them all, each once), then
// stdio flushed — so that it is measured in a phase, not left to reap. The
// backend then ends with _exit, and reap holds the kernel's teardown alone.
// Nothing that a destructor tore down may be used after it.
void RunExitHandlers();

// `cpu_us` of the calibrated loop (also used by calibrate's own checks).
void SpendCpu(const WeightSupport& support, double cpu_us);

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_WEIGHT_WORK_H_
