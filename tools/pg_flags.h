// `backendlab pg`'s flags, and the run's options and --explain-phases
// from them: the flag half of the command (tools/pg_command.cc formats).
#ifndef BACKENDLAB_TOOLS_PG_FLAGS_H_
#define BACKENDLAB_TOOLS_PG_FLAGS_H_

#include <cstdint>
#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pgreal/pg_run.h"
#include "tools/flags.h"

namespace backendlab::tools {

// Every flag of `pg`, with its default and help.
std::span<const FlagSpec> PgFlags();

// The run the flags ask for. Usage errors (InvalidArgument) name the flag:
// a flag for a server the tool starts beside --conninfo, a connection
// string libpq cannot parse, a bad list, size, duration or number.
absl::StatusOr<pgreal::PgRunOptions> OptionsFromFlags(const Flags& flags);

// --explain-phases: the phase rules of each version named (--pg-versions,
// else --bindir's or Debian's 15), without a server.
absl::Status ExplainPhasesOf(const Flags& flags, std::ostream& out);

// --top and --out of --profile, with their defaults.
absl::StatusOr<int64_t> TopN(const Flags& flags);
std::string ProfileDirectory(const Flags& flags);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PG_FLAGS_H_
