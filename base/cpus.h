// The CPUs this process may run on: what an experiment that pins threads or
// processes, and a test that needs two at once, can count on.
#ifndef BACKENDLAB_BASE_CPUS_H_
#define BACKENDLAB_BASE_CPUS_H_

#include <vector>

namespace backendlab {

// The CPUs of this thread's affinity mask (taskset, cgroup cpusets), in
// order; empty if the mask cannot be read.
std::vector<int> AllowedCpus();

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_CPUS_H_
