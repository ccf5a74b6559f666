// Interruptible sleeps and the counting pass's sums.
#include "waits/internal/run_control.h"

#include <time.h>

#include <algorithm>

#include "base/interrupt.h"
#include "base/resource_usage.h"

namespace backendlab::waits::internal {

bool SleepUnlessStopped(absl::Duration d) {
  const int64_t end = NowNs() + absl::ToInt64Nanoseconds(d);
  while (!StopRequested()) {
    const int64_t left = end - NowNs();
    if (left <= 0) return true;
    const timespec nap{0, std::min<int64_t>(left, 10'000'000)};
    nanosleep(&nap, nullptr);
  }
  return false;
}

SyscallsPerOp SumSyscalls(const std::vector<std::string>& names, std::span<const ChildReport> reports, int64_t ops) {
  SyscallsPerOp s;
  s.names = names;
  s.per_op.assign(names.size(), 0);
  for (const ChildReport& r : reports) {
    for (size_t k = 0; k < names.size(); ++k) s.per_op[k] += static_cast<double>(r.syscalls[k]);
    s.total += static_cast<double>(r.syscalls_total);
  }
  const double n = static_cast<double>(std::max<int64_t>(ops, 1));
  for (double& v : s.per_op) v /= n;
  s.total /= n;
  return s;
}

}  // namespace backendlab::waits::internal
