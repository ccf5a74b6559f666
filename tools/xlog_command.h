// `backendlab xlog`: the WAL insert locks and the last important LSN.
#ifndef BACKENDLAB_TOOLS_XLOG_COMMAND_H_
#define BACKENDLAB_TOOLS_XLOG_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

// Runs the experiment and prints its tables to `out`. InvalidArgument = a
// usage error (exit 2); Cancelled = stopped by a signal (exit 128 + signal);
// any other error = the run failed (exit 1).
absl::Status RunXlogCommand(std::span<const std::string> args, std::ostream& out);
std::string XlogUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_XLOG_COMMAND_H_
