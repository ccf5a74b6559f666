// `backendlab latch`: the latch implementations' ping-pong (the 2010 latch
// thread, docs/sources.md).
#ifndef BACKENDLAB_TOOLS_LATCH_COMMAND_H_
#define BACKENDLAB_TOOLS_LATCH_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

// Runs the experiment and prints its table to `out`. InvalidArgument = a
// usage error (exit 2); Cancelled = stopped by a signal (exit 128 + signal);
// any other error = the run failed (exit 1).
absl::Status RunLatchCommand(std::span<const std::string> args, std::ostream& out);
std::string LatchUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_LATCH_COMMAND_H_
