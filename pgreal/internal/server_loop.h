// One loop against one server of a pg run (pgreal/pg_servers.h): measured
// (MeasureOnce) or profiled (ProfileOnce), with the row's connections held
// beside it, and the server's log read for its set-up lines.
#ifndef BACKENDLAB_PGREAL_INTERNAL_SERVER_LOOP_H_
#define BACKENDLAB_PGREAL_INTERNAL_SERVER_LOOP_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pgreal/pg_run.h"
#include "pgreal/pooler.h"
#include "pgreal/setup_durations.h"
#include "profiling/sample_file.h"

namespace backendlab::pgreal::internal {

// How long a failed connection waits for the server's or the pooler's
// death in progress before it is called a connection failure.
inline constexpr int64_t kDeathGraceNs = 1'000'000'000;

// One measured loop against one server (through `pooler` if not null), its
// figures added to `target`: the rows' rates, client figures and, with a
// postmaster known, the server's usage over the loop (base/server_usage.h),
// taken once the loop's backends have been reaped. `hold_conninfo`: where
// the row's held connections go (the server itself, never the pooler).
absl::Status MeasureOnce(const PgRunOptions& options, const std::string& conninfo, const std::string& hold_conninfo,
                         pid_t postmaster, Pooler* pooler, PgTargetResult& target);

// The profile's pair of passes: the same loop unrecorded, then recorded by
// each profiler of options.profilers, with no counters open, so that the
// two rates side by side are what recording cost. `sample_file`: the
// server's, for the built-in sampler.
absl::Status ProfileOnce(const PgRunOptions& options, const std::string& conninfo, const std::string& hold_conninfo,
                         pid_t postmaster, int major, profiling::SampleFile* sample_file, PgTargetResult& target);

// Whether options.profilers holds `profiler`.
bool Uses(const PgRunOptions& options, Profiler profiler);

// Whether a server of `major` with these settings logs each connection's
// set-up durations (18+: log_connections holding setup_durations or all).
bool LogsSetup(int major, const Settings& settings);

// The size of the file at `path`; 0 if it cannot be read.
int64_t FileSize(const std::string& path);

// The "connection ready" lines the log gained since `offset` (moved past
// them), the first `warmup` of them (the round's warm-up connections come
// first) left out, up to `measured` kept; the measured ones without a line
// are counted in `missing`.
void ReadSetupLines(const std::string& log, int64_t& offset, int64_t warmup, int64_t measured,
                    std::vector<SetupDurations>& setup, int64_t& missing);

}  // namespace backendlab::pgreal::internal

#endif  // BACKENDLAB_PGREAL_INTERNAL_SERVER_LOOP_H_
