// LoopCounters: SyscallCounters read around a child's loop.
#include "waits/internal/loop_counters.h"

namespace backendlab::waits::internal {

std::vector<std::string> AvailableSyscallKinds(std::span<const std::string_view> wanted) {
  std::vector<std::string> names;
  for (std::string_view name : wanted) {
    if (names.size() < static_cast<size_t>(kMaxSyscallKinds) && profiling::HasSyscallTracepoint(name)) {
      names.emplace_back(name);
    }
  }
  return names;
}

absl::StatusOr<LoopCounters> LoopCounters::Open(const std::vector<std::string>& names) {
  std::vector<std::string_view> views(names.begin(), names.end());
  absl::StatusOr<profiling::SyscallCounters> counters = profiling::SyscallCounters::Open(views);
  if (!counters.ok()) return counters.status();
  LoopCounters c;
  c.counters_ = *std::move(counters);
  // Both readings sized now: Read() allocates nothing inside the loop.
  c.begin_.by_kind.resize(names.size());
  c.end_.by_kind.resize(names.size());
  c.delta_.by_kind.resize(names.size());
  return c;
}

void LoopCounters::End(ChildReport& report, bool accumulate) {
  if (!counters_.Read(end_)) return;
  counters_.Between(begin_, end_, delta_);
  const bool add = accumulate && report.syscalls_total >= 0;
  report.syscalls_total = add ? report.syscalls_total + delta_.total : delta_.total;
  for (size_t i = 0; i < delta_.by_kind.size() && i < static_cast<size_t>(kMaxSyscallKinds); ++i) {
    report.syscalls[i] = add ? report.syscalls[i] + delta_.by_kind[i] : delta_.by_kind[i];
  }
}

}  // namespace backendlab::waits::internal
