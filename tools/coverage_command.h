// `backendlab coverage-study`: simulated runs stopped on their verdicts, and
// how often their intervals hold the truth (base/coverage_study.h).
#ifndef BACKENDLAB_TOOLS_COVERAGE_COMMAND_H_
#define BACKENDLAB_TOOLS_COVERAGE_COMMAND_H_

#include <ostream>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace backendlab::tools {

// Runs the study and prints its table to `out`. InvalidArgument = a usage
// error (exit 2); any other error = the run failed (exit 1).
absl::Status RunCoverageCommand(std::span<const std::string> args, std::ostream& out);
std::string CoverageUsage();

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_COVERAGE_COMMAND_H_
