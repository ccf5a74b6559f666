// System calls by kind in the reports of `latch` and `waits`.
#include "tools/waits_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/cycle_flags.h"
#include "tools/machine_header.h"

namespace backendlab::tools {

absl::StatusOr<RunFlags> ParseRunFlags(const Flags& flags) {
  RunFlags run;
  absl::StatusOr<int64_t> rounds = flags.GetInt("rounds", 1, 1000);
  if (!rounds.ok()) return rounds.status();
  run.rounds = *rounds;
  absl::StatusOr<absl::Duration> duration = ParseDuration(flags.Get("duration"));
  if (!duration.ok()) return absl::InvalidArgumentError(absl::StrCat("--duration: ", duration.status().message()));
  run.duration = *duration;
  absl::StatusOr<bool> syscalls = flags.GetBool("syscalls");
  if (!syscalls.ok()) return syscalls.status();
  run.count_syscalls = *syscalls;
  return run;
}

nlohmann::json RunHeader(std::string_view command, const RunFlags& run, const absl::Status& syscalls_status) {
  nlohmann::json header = MachineHeader();
  header["command"] = command;
  header["rounds"] = run.rounds;
  header["duration_ms"] = absl::ToInt64Milliseconds(run.duration);
  header["syscalls_counted"] = run.count_syscalls && syscalls_status.ok();
  return header;
}

Cell SyscallKindsCell(const std::optional<waits::SyscallsPerOp>& s) {
  if (!s) return std::monostate{};
  std::string text;
  for (size_t i = 0; i < s->names.size(); ++i) {
    const double v = s->per_op[i];
    if (v == 0) continue;
    // A rare call (an EINTR, a stale wake-up) shown as what it is, not as 0.00.
    absl::StrAppendFormat(&text, v >= 0.01 ? "%s%s %.2f" : "%s%s %.4f", text.empty() ? "" : " ", s->names[i], v);
  }
  return text.empty() ? std::string("-") : text;
}

Cell SyscallTotalCell(const std::optional<waits::SyscallsPerOp>& s) {
  if (!s) return std::monostate{};
  return s->total;
}

nlohmann::json SyscallsJson(const std::optional<waits::SyscallsPerOp>& s) {
  if (!s) return nullptr;
  nlohmann::json by_kind = nlohmann::json::object();
  for (size_t i = 0; i < s->names.size(); ++i) by_kind[s->names[i]] = s->per_op[i];
  return {{"total", s->total}, {"by_kind", by_kind}};
}

void PrintSyscallsStatus(std::ostream& out, bool asked, const absl::Status& status) {
  if (asked && !status.ok()) out << "system calls not counted: " << status.message() << "\n";
}

}  // namespace backendlab::tools
