// `backendlab pg`: connect/disconnect loops against real PostgreSQL servers.
#ifndef BACKENDLAB_TOOLS_PG_COMMAND_H_
#define BACKENDLAB_TOOLS_PG_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

absl::Status RunPgCommand(std::span<const std::string> args, std::ostream& out);
std::string PgUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PG_COMMAND_H_
