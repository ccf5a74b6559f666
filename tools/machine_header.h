// The header every report carries: machine, kernel, build.
#ifndef BACKENDLAB_TOOLS_MACHINE_HEADER_H_
#define BACKENDLAB_TOOLS_MACHINE_HEADER_H_

#include <string>

#include "nlohmann/json.hpp"

namespace backendlab::tools {

// {"machine": {"cpu_model", "cores", "kernel", "transparent_hugepages"},
//  "build_type", "assert_checking"}
nlohmann::json MachineHeader();
// One line for the text report: "machine: AMD EPYC, 2 cores, Linux 6.1; build Release".
std::string MachineLine(const nlohmann::json& header);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_MACHINE_HEADER_H_
