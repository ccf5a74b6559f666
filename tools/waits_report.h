// What `latch` and `waits` share: the flags of a run, the header's common
// keys, and system calls by kind as a text cell, JSON and the line that
// says why they were not counted.
#ifndef BACKENDLAB_TOOLS_WAITS_REPORT_H_
#define BACKENDLAB_TOOLS_WAITS_REPORT_H_

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "tools/flags.h"
#include "tools/report.h"
#include "waits/syscalls_per_op.h"

namespace backendlab::tools {

// --rounds (1..1000), --duration (e.g. 300ms) and --syscalls (on/off).
struct RunFlags {
  int64_t rounds = 0;
  absl::Duration duration;
  bool count_syscalls = false;
};
absl::StatusOr<RunFlags> ParseRunFlags(const Flags& flags);

// The machine header with "command", "rounds", "duration_ms" and
// "syscalls_counted" (asked for, and the kernel let it).
nlohmann::json RunHeader(std::string_view command, const RunFlags& run, const absl::Status& syscalls_status);

// "epoll_wait 1.00 read 1.00" (kinds with no call left out, "-" when none
// at all), or an empty cell when not counted.
Cell SyscallKindsCell(const std::optional<waits::SyscallsPerOp>& s);
// The total per operation, or an empty cell when not counted.
Cell SyscallTotalCell(const std::optional<waits::SyscallsPerOp>& s);
// {"total": t, "by_kind": {"epoll_wait": 1.0, ...}} (every kind counted), or null.
nlohmann::json SyscallsJson(const std::optional<waits::SyscallsPerOp>& s);

// After a table: why system calls were not counted, once, if they were
// asked for and the kernel refused (the usual "syscalls: unavailable: …").
void PrintSyscallsStatus(std::ostream& out, bool asked, const absl::Status& status);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_WAITS_REPORT_H_
