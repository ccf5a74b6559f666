// `backendlab compare`'s flags, and the comparison they ask for: the flag
// half of the command (tools/compare_command.cc runs it and formats).
#ifndef BACKENDLAB_TOOLS_COMPARE_FLAGS_H_
#define BACKENDLAB_TOOLS_COMPARE_FLAGS_H_

#include <optional>
#include <span>

#include "absl/status/statusor.h"
#include "lifecycle/compare.h"
#include "pgreal/pg_run.h"
#include "tools/flags.h"

namespace backendlab::tools {

// Every flag of `compare`, with its default and help.
std::span<const FlagSpec> CompareFlags();

struct CompareRequest {
  lifecycle::CompareMatrix matrix;
  lifecycle::CycleOptions base;  // what every configuration shares
  lifecycle::CompareRunOptions run;
  double precision_percent = 0;  // --precision as given
  bool aa = false;
  bool require_decisive = false;  // --require-decisive: a ratio left ~ fails the run
  // --html: each configuration at the largest shared_buffers profiled for
  // so many connections after the rounds (lifecycle/compare_profiles.h); 0: none.
  int64_t profile_connections = 0;
  std::optional<pgreal::PgRunOptions> pg;  // --with-pg: the real servers beside the matrix
};

// The matrix and the run the flags ask for. Usage errors (InvalidArgument)
// name the flag: an unknown or repeated list entry (an equal value under
// another spelling, 1GB,1024MB, is a repeat), more clients than a round's
// connections or the open-file limit allow, a baseline that does not name a
// layout/exit-check[/catcache[/syscache]] or is not in the matrix, --via
// without --with-pg, a bad number or duration. --with-pg without a server
// installed is DefaultInstallation's error.
absl::StatusOr<CompareRequest> CompareFromFlags(const Flags& flags);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_COMPARE_FLAGS_H_
