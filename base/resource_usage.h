// Counters for one phase of a process's life: wall time, CPU time, page faults.
// The one implementation every module and tool uses for these numbers.
#ifndef BACKENDLAB_BASE_RESOURCE_USAGE_H_
#define BACKENDLAB_BASE_RESOURCE_USAGE_H_

#include <cstdint>
#include <string>

namespace backendlab {

// A reading of the calling process's counters. Reading costs one
// clock_gettime pair and one getrusage (about a microsecond): take readings
// around phases, not around single operations.
struct ResourceSample {
  int64_t wall_ns = 0;       // CLOCK_MONOTONIC
  int64_t cpu_ns = 0;        // user + system CPU time of the process
  int64_t minor_faults = 0;  // page faults served without I/O (zero page, COW, page cache)
  int64_t major_faults = 0;  // page faults that needed I/O
};

ResourceSample SampleSelf();
// The calling thread's own CPU and faults (RUSAGE_THREAD, the thread's CPU
// clock): in a single-threaded process, the same as SampleSelf; in a
// backend thread, that backend's alone.
ResourceSample SampleThread();

// Differences between two readings (after - before).
ResourceSample operator-(const ResourceSample& after, const ResourceSample& before);

// Monotonic wall clock in nanoseconds, for timing loops.
int64_t NowNs();

// The machine a figure was measured on, for report headers.
struct MachineInfo {
  std::string cpu_model;
  int cores = 0;
  std::string kernel;
  std::string transparent_hugepages;  // the selected mode, e.g. "madvise"
};
MachineInfo DescribeMachine();

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_RESOURCE_USAGE_H_
