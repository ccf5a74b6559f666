// What `backendlab profile` prints and writes from a profiled run: the text
// (also its summary.txt), the flame graph files, and the JSON header. Every
// figure comes from lifecycle::ProfileRun; nothing here derives one.
#ifndef BACKENDLAB_TOOLS_PROFILE_REPORT_H_
#define BACKENDLAB_TOOLS_PROFILE_REPORT_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "lifecycle/cycle.h"
#include "lifecycle/profile_run.h"
#include "nlohmann/json.hpp"
#include "profiling/folded_stacks.h"
#include "profiling/profile_views.h"

namespace backendlab::tools {

// The built-in profile: the configuration, the sampler's counts, the phase
// table, the samples by phase beside the counters' time, and the top-N table
// of the backends (`top`, from run.views.measured).
void PrintProfile(std::ostream& out, const lifecycle::CycleOptions& options, const lifecycle::ProfileRun& run,
                  int64_t top_n, const std::vector<profiling::FunctionSamples>& top);

// perf's top-N table of the backends beside the sampler's `top`.
void PrintPerfProfile(std::ostream& out, const profiling::FoldedStacks& perf_backends, int64_t top_n,
                      const std::vector<profiling::FunctionSamples>& top);

// Writes `view` as dir/NAME.folded and dir/NAME.svg, and adds both to
// `written`; the SVG also into `svg` when given (an HTML page's figure).
absl::Status WriteView(const std::string& dir, const profiling::ProfileView& view, std::vector<std::string>& written,
                       std::string* svg = nullptr);

// The --json/--csv header: machine, command, config, summary, sampler, top.
nlohmann::json ProfileHeader(const lifecycle::CycleOptions& options, const lifecycle::ProfileRun& run,
                             const std::vector<profiling::FunctionSamples>& top);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PROFILE_REPORT_H_
