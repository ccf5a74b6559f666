// PostgreSQL 18's own clock of a connection's set-up: with
// log_connections=setup_durations every client backend logs, once, when it
// is first ready for a query,
//   connection ready: setup total=%.3f ms, fork=%.3f ms, authentication=%.3f ms
// (PostgreSQL commit 18cd15e706ac; docs/sources.md). The
// server's figures, read from its log, to be set beside the tool's connect
// latency and its per-phase CPU.
//
// What each includes (struct ConnectionTiming, backend_startup.h): `total`
// from the socket's creation after accept() to before the first
// ReadyForQuery, so a client's connect latency, which adds the handshake and
// the accept queue, is longer; `fork` from just before fork_process() in
// the postmaster to the child's first statement, scheduling included;
// `authentication` around ClientAuthentication(). Wall times, not CPU.
#ifndef BACKENDLAB_PGREAL_SETUP_DURATIONS_H_
#define BACKENDLAB_PGREAL_SETUP_DURATIONS_H_

#include <optional>
#include <span>
#include <string_view>

#include "base/summary.h"

namespace backendlab::pgreal {

struct SetupDurations {
  double total_ms = 0;
  double fork_ms = 0;
  double authentication_ms = 0;
};

// The durations in one line of a server log (any log_line_prefix before
// the message), or nullopt if the line holds no such message, or one whose
// three figures are not finite, non-negative milliseconds in the server's
// own format. The message is PostgreSQL's English one: a server started
// with lc_messages other than C or en would need its translation.
std::optional<SetupDurations> ParseSetupDurations(std::string_view line);

// Each figure over many connections.
struct SetupSummary {
  Summary total_ms;
  Summary fork_ms;
  Summary authentication_ms;
};
SetupSummary SummarizeSetupDurations(std::span<const SetupDurations> durations);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_SETUP_DURATIONS_H_
