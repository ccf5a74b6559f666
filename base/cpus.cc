// The affinity mask, read once per call.
#include "base/cpus.h"

#include <sched.h>

#include <algorithm>

namespace backendlab {

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  return cpus;
}

int SaturationClients() { return std::max(2, 2 * static_cast<int>(AllowedCpus().size())); }

}  // namespace backendlab
