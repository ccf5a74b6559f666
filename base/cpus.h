// The CPUs this process may run on: what an experiment that pins threads or
// processes, and a test that needs two at once, can count on.
#ifndef BACKENDLAB_BASE_CPUS_H_
#define BACKENDLAB_BASE_CPUS_H_

#include <vector>

namespace backendlab {

// The CPUs of this thread's affinity mask (taskset, cgroup cpusets), in
// order; empty if the mask cannot be read.
std::vector<int> AllowedCpus();

// Connections in flight that keep every allowed CPU busy: twice their
// number, at least 2 (a connection's client and its backend alternate on
// a core). What "at saturation" means for conn/s.
int SaturationClients();

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_CPUS_H_
