// What reading the clock twice costs, so that a timed operation's figure can
// leave it out.
#ifndef BACKENDLAB_WAITS_INTERNAL_EXPERIMENT_CLOCK_H_
#define BACKENDLAB_WAITS_INTERNAL_EXPERIMENT_CLOCK_H_

#include <cstdint>

namespace backendlab::waits::internal {

// The median over a few batches of the ns between two back-to-back
// NowNs() calls (a vDSO clock_gettime each: ~20-50 ns on these VMs).
int64_t ClockPairNs();

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_EXPERIMENT_CLOCK_H_
