// What `cycle`, `compare` and `profile` print and write about a cycle: its
// configuration, summary, phase table, incidents and exit status.
#ifndef BACKENDLAB_TOOLS_CYCLE_REPORT_H_
#define BACKENDLAB_TOOLS_CYCLE_REPORT_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "lifecycle/cycle.h"
#include "lifecycle/cycle_summary.h"
#include "nlohmann/json.hpp"
#include "profiling/perf_events.h"
#include "tools/report.h"

namespace backendlab::tools {

// "fork mode, layout hash, exit-check assert, shared_buffers 8GB, catcache palloc0, syscache pg17, 1 client, ..."
// Without the configuration (for `compare`): "fork mode, 1 client, ...".
std::string ConfigLine(const lifecycle::CycleOptions& options, bool with_configuration = true);
nlohmann::json ConfigJson(const lifecycle::CycleOptions& options);
nlohmann::json SummaryJson(const lifecycle::CycleSummary& s, const lifecycle::CycleResult& result);

// One row per phase: median and p99 us, CPU, faults, syscalls, and a column
// per --counters event (medians; empty where the kernel refused it).
// A thread's backends name their first and last phases as threads do
// (lifecycle::PhaseName(Phase, BackendKind)).
Report PhaseReport(const lifecycle::CycleSummary& s, std::span<const profiling::PerfEvent> counters = {},
                   lifecycle::BackendKind kind = lifecycle::BackendKind::kProcess);

// Crashed backends (warm-up ones included) and leak warnings, one line each
// (the first few).
// The whole server's figures per connection (fork mode): CPU, the
// postmaster's own share and the ceiling it sets, faults; with `hold`, the
// held connections' opening and each held backend's memory. Nothing in
// inproc mode.
void PrintServerUsage(const lifecycle::CycleResult& result, int64_t hold, std::ostream& out);
nlohmann::json ServerUsageJson(const lifecycle::CycleResult& result, int64_t hold);

void PrintIncidents(const lifecycle::CycleResult& result, std::ostream& out);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_CYCLE_REPORT_H_
