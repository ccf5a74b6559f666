// The export flags and files.
#include "tools/exports_report.h"

#include "absl/strings/str_cat.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kExportFlags[] = {
    {"pprof", "", "also write the profile as pprof's profile.proto, gzipped (go tool pprof, Parca, Pyroscope)"},
    {"speedscope", "", "also write the profile as speedscope JSON (speedscope.app, offline too)"},
    {"trace", "", "also write the first --trace-connections backends' phases as Chrome trace events (Perfetto UI, chrome://tracing)"},
    {"trace-connections", "200", "with --trace: the backends of this many connections, from the first, on the timeline"},
};

}  // namespace

std::span<const FlagSpec> ExportFlagSpecs() { return kExportFlags; }

absl::StatusOr<ExportRequest> ExportRequestFromFlags(const Flags& flags) {
  ExportRequest r;
  r.pprof = flags.Get("pprof");
  r.speedscope = flags.Get("speedscope");
  r.trace = flags.Get("trace");
  absl::StatusOr<int64_t> k = flags.GetInt("trace-connections", 1, 100'000);
  if (!k.ok()) return k.status();
  if (flags.Given("trace-connections") && r.trace.empty()) {
    return absl::InvalidArgumentError("--trace-connections goes with --trace");
  }
  r.trace_connections = static_cast<int>(*k);
  return r;
}

std::string ProcessRole(std::string_view process) {
  return process == "postmaster" || process == "backend" ? std::string(process) : std::string("aux");
}

absl::Status WriteExports(const ExportRequest& request, const profiling::ExportInput& input,
                          const std::vector<profiling::TraceSpan>& spans, std::vector<std::string>& written) {
  if (!request.pprof.empty()) {
    if (absl::Status s = WriteTextFile(request.pprof, profiling::ToPprofGzip(input)); !s.ok()) return s;
    written.push_back(request.pprof);
  }
  if (!request.speedscope.empty()) {
    if (absl::Status s = WriteTextFile(request.speedscope, profiling::ToSpeedscopeJson(input)); !s.ok()) return s;
    written.push_back(request.speedscope);
  }
  if (!request.trace.empty()) {
    if (absl::Status s = WriteTextFile(request.trace, profiling::ToChromeTraceJson(spans, input.title)); !s.ok()) {
      return s;
    }
    written.push_back(request.trace);
  }
  return absl::OkStatus();
}

}  // namespace backendlab::tools
