// `backendlab catcache`: the catalog-cache bucket allocation at backend start.
#ifndef BACKENDLAB_TOOLS_CATCACHE_COMMAND_H_
#define BACKENDLAB_TOOLS_CATCACHE_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

// Runs the comparison and prints its table to `out`. InvalidArgument = a usage
// error (exit 2); Cancelled = stopped by a signal (exit 128 + signal); any
// other error = the run failed (exit 1).
absl::Status RunCatcacheCommand(std::span<const std::string> args, std::ostream& out);
std::string CatcacheUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_CATCACHE_COMMAND_H_
