// Fuzzes ParseBackendWeight (--backend-profile files): never a crash, and a
// profile it accepts writes back (BackendWeightToJson) to text that parses
// to the same profile.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "lifecycle/backend_weight.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<backendlab::lifecycle::BackendWeight> w = backendlab::lifecycle::ParseBackendWeight(text);
  if (!w.ok()) {
    BACKENDLAB_CHECK(absl::IsInvalidArgument(w.status()));
    return 0;
  }
  const std::string written = backendlab::lifecycle::BackendWeightToJson(*w).dump();
  absl::StatusOr<backendlab::lifecycle::BackendWeight> again = backendlab::lifecycle::ParseBackendWeight(written);
  BACKENDLAB_CHECK(again.ok());
  BACKENDLAB_CHECK(backendlab::lifecycle::BackendWeightToJson(*again).dump() == written);
  return 0;
}
