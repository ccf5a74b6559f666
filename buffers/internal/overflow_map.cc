// The overflow map's slow paths, shared by `hash` and `hash-keys`.
#include "buffers/internal/overflow_map.h"

#include <algorithm>
#include <limits>

namespace backendlab::buffers::internal {

// Takes `buffer` out of the map to move it inline: its count, 0 if it is not
// there. A count already at INT32_MAX stays in the map: CountOverflow.
absl::StatusOr<int32_t> TakeFromOverflow(OverflowMap& overflow, BufferId buffer) {
  if (overflow.empty()) return 0;
  auto it = overflow.find(buffer);
  if (it == overflow.end()) return 0;
  if (it->second == std::numeric_limits<int32_t>::max()) return CountOverflow(buffer);
  const int32_t count = it->second;
  overflow.erase(it);
  return count;
}

// An unpin of a buffer not held inline.
absl::Status UnpinOverflowed(OverflowMap& overflow, BufferId buffer) {
  auto it = overflow.find(buffer);
  if (it == overflow.end()) return NotPinned(buffer);
  if (--it->second == 0) overflow.erase(it);
  return absl::OkStatus();
}

int32_t OverflowCount(const OverflowMap& overflow, BufferId buffer) {
  auto it = overflow.find(buffer);
  return it == overflow.end() ? 0 : it->second;
}

// The leaks found so far, with the map's added, in ascending order.
std::vector<Leak> WithOverflowLeaks(std::vector<Leak> leaks, const OverflowMap& overflow) {
  for (const auto& [buffer, count] : overflow) leaks.push_back({buffer, count});
  if (leaks.size() > 1) {
    std::sort(leaks.begin(), leaks.end(), [](const Leak& a, const Leak& b) { return a.buffer < b.buffer; });
  }
  return leaks;
}

size_t OverflowMemoryBytes(const OverflowMap& overflow) {
  return overflow.capacity() * (sizeof(std::pair<const BufferId, int32_t>) + 1);
}

}  // namespace backendlab::buffers::internal
