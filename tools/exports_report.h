// The exports `profile` and `pg --profile` write beside their flame graphs:
// pprof, speedscope and a Chrome trace (profiling/exports.h), from flags
// both commands share.
#ifndef BACKENDLAB_TOOLS_EXPORTS_REPORT_H_
#define BACKENDLAB_TOOLS_EXPORTS_REPORT_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "profiling/exports.h"
#include "tools/flags.h"

namespace backendlab::tools {

// --pprof, --speedscope, --trace and --trace-connections.
std::span<const FlagSpec> ExportFlagSpecs();

struct ExportRequest {
  std::string pprof, speedscope, trace;  // "" for none
  int trace_connections = 200;           // the first K connections' backends on the trace
  bool any() const { return !pprof.empty() || !speedscope.empty() || !trace.empty(); }
};

// The flags (their files are checked with every other output's, by
// CheckOutputPaths). InvalidArgument for a bad --trace-connections.
absl::StatusOr<ExportRequest> ExportRequestFromFlags(const Flags& flags);

// The role a process root plays: "postmaster", "backend", else "aux".
std::string ProcessRole(std::string_view process);

// Writes each file asked for, adding it to `written`.
absl::Status WriteExports(const ExportRequest& request, const profiling::ExportInput& input,
                          const std::vector<profiling::TraceSpan>& spans, std::vector<std::string>& written);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_EXPORTS_REPORT_H_
