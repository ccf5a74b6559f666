// Shared by the 8-entry layouts (`hash`, `hash-keys`): the overflow map that
// holds what does not fit inline, and its slow paths (out of line, off the
// pin path). Not for other modules.
#ifndef BACKENDLAB_BUFFERS_INTERNAL_OVERFLOW_MAP_H_
#define BACKENDLAB_BUFFERS_INTERNAL_OVERFLOW_MAP_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "buffers/refcount_table.h"

namespace backendlab::buffers::internal {

using OverflowMap = absl::flat_hash_map<BufferId, int32_t>;

// Takes `buffer` out of the map to move it inline: its count, 0 if it is not
// there. A count already at INT32_MAX stays in the map: CountOverflow.
absl::StatusOr<int32_t> TakeFromOverflow(OverflowMap& overflow, BufferId buffer);

// An unpin of a buffer not held inline.
absl::Status UnpinOverflowed(OverflowMap& overflow, BufferId buffer);

int32_t OverflowCount(const OverflowMap& overflow, BufferId buffer);

// The inline leaks found so far, with the map's added, in ascending order.
std::vector<Leak> WithOverflowLeaks(std::vector<Leak> leaks, const OverflowMap& overflow);

size_t OverflowMemoryBytes(const OverflowMap& overflow);

}  // namespace backendlab::buffers::internal

#endif  // BACKENDLAB_BUFFERS_INTERNAL_OVERFLOW_MAP_H_
