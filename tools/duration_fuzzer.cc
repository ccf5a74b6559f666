// libFuzzer target: ParseDuration (--duration) on any bytes. An accepted
// duration is in (0, a day] and reads back the same written in milliseconds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "tools/flags.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using backendlab::tools::ParseDuration;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<absl::Duration> d = ParseDuration(text);
  if (!d.ok()) return 0;
  BACKENDLAB_CHECK(*d > absl::ZeroDuration() && *d <= absl::Hours(24));
  const int64_t ms = absl::ToInt64Milliseconds(*d);
  BACKENDLAB_CHECK(absl::Milliseconds(ms) == *d);  // a whole number of milliseconds
  const absl::StatusOr<absl::Duration> again = ParseDuration(std::to_string(ms) + "ms");
  BACKENDLAB_CHECK(again.ok() && *again == *d);
  return 0;
}
