// `backendlab cycle`: connect/disconnect loops against one configuration,
// phase by phase (lifecycle::RunCycle).
#ifndef BACKENDLAB_TOOLS_CYCLE_COMMAND_H_
#define BACKENDLAB_TOOLS_CYCLE_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "tools/flags.h"

namespace backendlab::tools {

absl::Status RunCycleCommand(std::span<const std::string> args, std::ostream& out);
std::string CycleUsage();
// The flags `cycle` takes; `profile` takes them too.
std::span<const FlagSpec> CycleFlagSpecs();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_CYCLE_COMMAND_H_
