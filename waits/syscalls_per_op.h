// System calls per operation, by kind: what the experiments' counting
// passes report.
#ifndef BACKENDLAB_WAITS_SYSCALLS_PER_OP_H_
#define BACKENDLAB_WAITS_SYSCALLS_PER_OP_H_

#include <string>
#include <vector>

namespace backendlab::waits {

// Exact counts (the syscalls tracepoints) divided by the operations counted
// (round trips, SetLatch calls): names[i] → per_op[i]; `total` holds every
// call, those of no listed kind included.
struct SyscallsPerOp {
  std::vector<std::string> names;
  std::vector<double> per_op;
  double total = 0;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_SYSCALLS_PER_OP_H_
