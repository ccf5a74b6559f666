// libFuzzer target: ParseSetupDurations on any bytes, as a server log's
// lines can hold anything a client or an extension writes. An accepted
// line's figures are finite and non-negative, and the message PostgreSQL
// would print for them (%.3f each) parses back to the same figures.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string_view>

#include "base/check.h"
#include "pgreal/setup_durations.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using backendlab::pgreal::ParseSetupDurations;
  using backendlab::pgreal::SetupDurations;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const std::optional<SetupDurations> d = ParseSetupDurations(line);
  if (!d) return 0;
  for (double ms : {d->total_ms, d->fork_ms, d->authentication_ms}) BACKENDLAB_CHECK(std::isfinite(ms) && ms >= 0);
  char again[512];
  const int n = std::snprintf(again, sizeof again, "LOG:  connection ready: setup total=%.3f ms, fork=%.3f ms, authentication=%.3f ms",
                              d->total_ms, d->fork_ms, d->authentication_ms);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof again) return 0;  // figures too long to print here: nothing to compare
  const std::optional<SetupDurations> back = ParseSetupDurations(std::string_view(again, static_cast<size_t>(n)));
  BACKENDLAB_CHECK(back && back->total_ms == d->total_ms && back->fork_ms == d->fork_ms &&
                   back->authentication_ms == d->authentication_ms);
  return 0;
}
