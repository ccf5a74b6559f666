// What `backendlab pg --profile` prints and writes from a server profile:
// the phase table (unclaimed always shown), the backends' top functions, and
// folded stacks and flame graphs as `profile` writes them.
#ifndef BACKENDLAB_TOOLS_PG_PROFILE_REPORT_H_
#define BACKENDLAB_TOOLS_PG_PROFILE_REPORT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pgreal/server_profile.h"

namespace backendlab::tools {

// The recording line (perf, unwinder, rate, seconds, samples kept and
// dropped), the phase table (phase, samples, % of the server's samples, every
// phase and the unclaimed row) and the top-N functions of the backends.
void PrintPgProfile(std::ostream& out, const pgreal::ServerProfile& profile, int64_t top_n);

// Writes into `dir`: all.folded/.svg (every server sample under its role),
// phases.folded/.svg (under role and "[phase]") and phase-NAME.folded/.svg
// for each phase with samples (unclaimed too), through WriteView; adds each
// file to `written`.
absl::Status WritePgProfile(const std::string& dir, const pgreal::ServerProfile& profile,
                            std::vector<std::string>& written);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PG_PROFILE_REPORT_H_
