// What `backendlab pg` prints under its header: the table of its targets
// and how to read it. Formats pgreal's result, its statistics computed
// beforehand (pgreal::ComputePgStats); computes nothing.
#ifndef BACKENDLAB_TOOLS_PG_REPORT_H_
#define BACKENDLAB_TOOLS_PG_REPORT_H_

#include <ostream>

#include "pgreal/pg_run.h"
#include "tools/report.h"

namespace backendlab::tools {

// A row per target: conn/s and server CPU per connection as medians with
// their ratios to the baseline (marked where short of `precision`, > 0),
// connect latency, client CPU, the server's other figures per connection,
// the pooler's, and each round's figures.
Report PgTable(const pgreal::PgResult& result, double precision);

// The notes under the table: what each column is, the precision reached,
// the poolers' backends, kept directories, counters off or refused.
void PrintPgNotes(const pgreal::PgResult& result, const pgreal::PgRunOptions& options, std::ostream& out);

// The server's own clock beside the tool's (pgreal::ComputeServerClocks):
// a row per direct target, or nothing to print (false) when the run has
// none. Then what each figure includes, the gaps over 20 % explained, and
// what the logging costs (each setup-durations row over its stock one).
bool PrintServerClock(const pgreal::PgResult& result, std::ostream& out);

// Many connections (pgreal/many_connections.h): with --hold, a table of the
// held rows (the time to open them and its growth, the new connections'
// costs beside them, each held backend's memory); with more than one
// --clients entry, each series' conn/s against the postmaster's ceiling and
// what was busiest where it saturated. `cpus`: the CPUs the run had.
void PrintManyConnections(const pgreal::PgResult& result, int cpus, std::ostream& out);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PG_REPORT_H_
