// `backendlab waits`: what a backend pays to wait for its socket, per wait
// strategy and number of client/backend pairs (the 2018 WaitLatchOrSocket
// thread, docs/sources.md).
#ifndef BACKENDLAB_TOOLS_WAITS_COMMAND_H_
#define BACKENDLAB_TOOLS_WAITS_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

// As RunLatchCommand: InvalidArgument exit 2, Cancelled 128 + signal, other errors 1.
absl::Status RunWaitsCommand(std::span<const std::string> args, std::ostream& out);
std::string WaitsUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_WAITS_COMMAND_H_
