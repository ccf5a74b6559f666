// `backendlab profile`: call graphs of one configuration's backends, from the
// built-in sampler and, side by side, from perf.
#ifndef BACKENDLAB_TOOLS_PROFILE_COMMAND_H_
#define BACKENDLAB_TOOLS_PROFILE_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

absl::Status RunProfileCommand(std::span<const std::string> args, std::ostream& out);
std::string ProfileUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PROFILE_COMMAND_H_
