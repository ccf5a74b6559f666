// `backendlab diff`: two folded profiles of one workload, B set against A.
#ifndef BACKENDLAB_TOOLS_DIFF_COMMAND_H_
#define BACKENDLAB_TOOLS_DIFF_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

// Reads A and B (the first two arguments that are not flags), writes their
// diff into --out and prints the functions that grew and shrank most.
// InvalidArgument = a usage error (exit 2): a file that cannot be read or is
// not folded stacks (the line named); any other error = the run failed.
absl::Status RunDiffCommand(std::span<const std::string> args, std::ostream& out);
std::string DiffUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_DIFF_COMMAND_H_
