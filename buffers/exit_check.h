// The exit-time leak check (PostgreSQL's AtProcExit_Buffers / CheckForBufferLeaks)
// and the policy that decides whether it runs.
#ifndef BACKENDLAB_BUFFERS_EXIT_CHECK_H_
#define BACKENDLAB_BUFFERS_EXIT_CHECK_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/check.h"
#include "base/names.h"
#include "buffers/refcount_table.h"
#include "buffers/scan_kernels.h"

namespace backendlab::buffers {

enum class ExitCheckPolicy {
  kAlways,  // scan at every exit and release what is found (PostgreSQL 9.0)
  kAssert,  // only in builds with BACKENDLAB_USE_ASSERT_CHECKING (PostgreSQL >= 9.1)
  kOff,     // never
};
inline constexpr NamedValue<ExitCheckPolicy> kExitCheckPolicyNames[] = {
    {ExitCheckPolicy::kAlways, "always"}, {ExitCheckPolicy::kAssert, "assert"}, {ExitCheckPolicy::kOff, "off"}};
inline constexpr auto kAllExitCheckPolicies = ValuesOf(kExitCheckPolicyNames);

std::string_view ExitCheckPolicyName(ExitCheckPolicy policy);
absl::StatusOr<ExitCheckPolicy> ParseExitCheckPolicy(std::string_view name);

struct ExitCheckResult {
  bool ran = false;          // false: the policy (or the build) skipped the check
  std::vector<Leak> leaks;   // every pin still held, once; released before return
};

// One line per leak, like PostgreSQL's PrintBufferLeakWarning.
std::string FormatLeakWarning(const Leak& leak);

// True when `policy` makes the exit check run in this build. `assert` is
// compiled out of builds without assert checking: no scan, no cost.
constexpr bool ExitCheckRuns(ExitCheckPolicy policy) {
  return policy == ExitCheckPolicy::kAlways || (policy == ExitCheckPolicy::kAssert && kAssertChecking);
}

// Runs the exit check of `table` under `policy`. Leaks found are returned (the
// caller reports them: they are never dropped) and then released, as 9.0's
// AtProcExit_Buffers forcibly released leftover pins.
template <RefCountTable T>
ExitCheckResult RunExitCheck(T& table, ExitCheckPolicy policy, ScanKernel kernel) {
  ExitCheckResult result;
  if (!ExitCheckRuns(policy)) return result;
  result.ran = true;
  result.leaks = table.FindLeaks(kernel);
  if (!result.leaks.empty()) table.ReleaseAll();
  return result;
}

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_EXIT_CHECK_H_
