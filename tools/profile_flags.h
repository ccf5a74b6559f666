// `backendlab profile`'s flags: `cycle`'s, the sampler's and the outputs',
// made into the run's request.
#ifndef BACKENDLAB_TOOLS_PROFILE_FLAGS_H_
#define BACKENDLAB_TOOLS_PROFILE_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "lifecycle/cycle.h"
#include "profiling/sampler.h"
#include "tools/exports_report.h"
#include "tools/flags.h"

namespace backendlab::tools {

// Every flag of `profile`: cycle's, its own, the exports'.
std::vector<FlagSpec> ProfileFlags();

// Whether `arg` is one of profile's own flags (--name=value, or an on/off
// flag alone), which `cycle` under perf must not be given.
bool IsProfileFlag(std::string_view arg);

struct ProfileRequest {
  lifecycle::CycleOptions options;  // its sampler set
  int64_t top_n = 15;
  bool perf = false;  // the same workload under perf record too
  ExportRequest exports;
  // --baseline: that configuration profiled first, with the same flags.
  std::optional<std::vector<std::string>> baseline;
  std::string dir;  // --out
  bool html = false;
};

// The request, with every output path checked before the run.
absl::StatusOr<ProfileRequest> ProfileFromFlags(const Flags& flags);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PROFILE_FLAGS_H_
