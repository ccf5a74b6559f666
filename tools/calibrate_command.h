// `backendlab calibrate`: a backend weight profile fitted to a real server.
#ifndef BACKENDLAB_TOOLS_CALIBRATE_COMMAND_H_
#define BACKENDLAB_TOOLS_CALIBRATE_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

// InvalidArgument exit 2, Cancelled 128 + signal, other errors 1.
absl::Status RunCalibrateCommand(std::span<const std::string> args, std::ostream& out);
std::string CalibrateUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_CALIBRATE_COMMAND_H_
