// A child's system calls by kind around its loop, for an experiment's
// counting pass (exact counts; never during a timed run: a counted call
// costs more than an uncounted one).
#ifndef BACKENDLAB_WAITS_INTERNAL_LOOP_COUNTERS_H_
#define BACKENDLAB_WAITS_INTERNAL_LOOP_COUNTERS_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "profiling/perf_events.h"
#include "waits/internal/children.h"

namespace backendlab::waits::internal {

// The names of `wanted` this kernel has a tracepoint for, in order, at most
// kMaxSyscallKinds.
std::vector<std::string> AvailableSyscallKinds(std::span<const std::string_view> wanted);

class LoopCounters {
 public:
  // Opens the counters in the calling process (a child, after its set-up).
  static absl::StatusOr<LoopCounters> Open(const std::vector<std::string>& names);

  void Begin() { (void)counters_.Read(begin_); }
  // The counts since Begin() into `report` (syscalls_total, syscalls[i] for
  // names[i]); added to what it holds with `accumulate`, for a loop that
  // counts only part of each turn.
  void End(ChildReport& report, bool accumulate = false);

 private:
  profiling::SyscallCounters counters_;
  profiling::SyscallCounters::Counts begin_, end_, delta_;
};

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_LOOP_COUNTERS_H_
