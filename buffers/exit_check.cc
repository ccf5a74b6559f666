// Exit-check policy names and the leak warning line.
#include "buffers/exit_check.h"

#include "absl/strings/str_cat.h"
#include "base/names.h"

namespace backendlab::buffers {

std::string_view ExitCheckPolicyName(ExitCheckPolicy policy) { return NameOf(policy, kExitCheckPolicyNames); }

absl::StatusOr<ExitCheckPolicy> ParseExitCheckPolicy(std::string_view name) {
  return ParseName(name, kExitCheckPolicyNames, "exit-check policy");
}

std::string FormatLeakWarning(const Leak& leak) {
  return absl::StrCat("buffer refcount leak: [", leak.buffer, "] refcount=", leak.count);
}

}  // namespace backendlab::buffers
