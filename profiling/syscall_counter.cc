// SyscallCounter on PerfCounters, with its own wording of the reasons.
#include "profiling/syscall_counter.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace backendlab::profiling {
namespace {

constexpr PerfEvent kSyscallsOnly[] = {PerfEvent::kSyscalls};

absl::Status Reworded(const absl::Status& unavailable) {
  return absl::UnavailableError(
      absl::StrCat("syscall counts unavailable: ", std::string(internal::UnavailableReason(unavailable))));
}

}  // namespace

absl::Status SyscallCounter::Availability() {
  const absl::Status status = PerfEventAvailability(PerfEvent::kSyscalls);
  return status.ok() ? status : Reworded(status);
}

absl::StatusOr<SyscallCounter> SyscallCounter::Open() {
  PerfCounters counters = PerfCounters::Open(kSyscallsOnly);
  if (std::vector<absl::Status> missing = counters.Unavailable(); !missing.empty()) return Reworded(missing.front());
  return SyscallCounter(std::move(counters));
}

int64_t SyscallCounter::Read() const { return counters_.Read(PerfEvent::kSyscalls); }

}  // namespace backendlab::profiling
