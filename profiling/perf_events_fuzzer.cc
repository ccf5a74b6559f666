// libFuzzer target: ParsePerfEventList (--counters) on any bytes. An accepted
// list names each event once, and the events written back with PerfEventName
// parse to the same list.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "profiling/perf_events.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace backendlab::profiling;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<std::vector<PerfEvent>> events = ParsePerfEventList(text);
  if (!events.ok()) return 0;
  BACKENDLAB_CHECK(!events->empty());
  std::string names;
  for (size_t i = 0; i < events->size(); ++i) {
    BACKENDLAB_CHECK(std::count(events->begin(), events->end(), (*events)[i]) == 1);
    if (i > 0) names += ',';
    names += PerfEventName((*events)[i]);
  }
  const absl::StatusOr<std::vector<PerfEvent>> again = ParsePerfEventList(names);
  BACKENDLAB_CHECK(again.ok() && *again == *events);
  return 0;
}
