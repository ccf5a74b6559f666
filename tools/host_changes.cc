// A killed run's change to the host, undone and said at a command's start.
#include "tools/host_changes.h"

#include <string>

#include "pgreal/huge_pages.h"

namespace backendlab::tools {

void RestoreHostChanges(std::ostream& out) {
  const std::string restored = pgreal::RestoreHugePagesOfEndedRun();
  if (!restored.empty()) out << restored << std::endl;
}

}  // namespace backendlab::tools
