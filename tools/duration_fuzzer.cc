// libFuzzer target: ParseDurationMs (--duration) on any bytes. An accepted
// duration is in (0, a day] and reads back the same written in milliseconds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "tools/cycle_flags.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using backendlab::tools::ParseDurationMs;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<int64_t> ms = ParseDurationMs(text);
  if (!ms.ok()) return 0;
  BACKENDLAB_CHECK(*ms > 0 && *ms <= int64_t{24} * 3600 * 1000);
  const absl::StatusOr<int64_t> again = ParseDurationMs(std::to_string(*ms) + "ms");
  BACKENDLAB_CHECK(again.ok() && *again == *ms);
  return 0;
}
