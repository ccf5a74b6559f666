// `backendlab compare`: connect/disconnect loops over a matrix of
// configurations, interleaved in rounds, with real servers beside them
// (lifecycle/compare.h).
#ifndef BACKENDLAB_TOOLS_COMPARE_COMMAND_H_
#define BACKENDLAB_TOOLS_COMPARE_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

absl::Status RunCompareCommand(std::span<const std::string> args, std::ostream& out);
std::string CompareUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_COMPARE_COMMAND_H_
