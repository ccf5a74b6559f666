// Layout `bytes`: one uint8 per shared buffer plus an overflow map for counts
// of 255 and more (proposed on pgsql-hackers in 2010, never built in PostgreSQL).
#ifndef BACKENDLAB_BUFFERS_BYTE_REFCOUNT_H_
#define BACKENDLAB_BUFFERS_BYTE_REFCOUNT_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "buffers/internal/flat_table.h"
#include "buffers/refcount_table.h"

namespace backendlab::buffers {

// Invariant: a byte of kOverflowed means the true count (>= 255) is in the
// overflow map, and the map holds exactly the buffers whose byte is kOverflowed.
// Counts below 255 never touch the map, so the hot path is a byte increment and
// the exit check reads a quarter of the memory the `array` layout reads.
class ByteRefCount {
 public:
  static constexpr Layout kLayout = Layout::kBytes;
  static constexpr uint8_t kOverflowed = 255;

  static absl::StatusOr<ByteRefCount> Create(uint32_t nbuffers);

  absl::Status Pin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    uint8_t& count = counts_[buffer];
    if (count < kOverflowed - 1) [[likely]] {
      ++count;
      return absl::OkStatus();
    }
    return PinSlow(buffer);
  }

  absl::Status Unpin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    uint8_t& count = counts_[buffer];
    if (count - 1u < kOverflowed - 1u) [[likely]] {  // 1 .. 254
      --count;
      return absl::OkStatus();
    }
    if (count == 0) return internal::NotPinned(buffer);
    return UnpinOverflowed(buffer);
  }

  absl::StatusOr<int32_t> Count(BufferId buffer) const {
    if (buffer >= nbuffers_) return internal::OutOfRange(buffer, nbuffers_);
    return CountOf(buffer);
  }

  size_t HeldCount() const;
  std::vector<Leak> FindLeaks(ScanKernel kernel) const;
  void ReleaseAll();
  size_t MemoryBytes() const;
  uint32_t nbuffers() const { return nbuffers_; }
  const uint8_t* data() const { return counts_.get(); }
  size_t OverflowEntries() const { return overflow_.size(); }

  // Test seam: set a count directly (e.g. near INT32_MAX), keeping the invariant.
  void SetCountForTesting(BufferId buffer, int32_t count);

 private:
  ByteRefCount(internal::FlatCounts<uint8_t> counts, uint32_t nbuffers)
      : counts_(std::move(counts)), nbuffers_(nbuffers) {}

  absl::Status PinSlow(BufferId buffer);
  absl::Status UnpinOverflowed(BufferId buffer);
  int32_t CountOf(BufferId buffer) const {
    uint8_t count = counts_[buffer];
    return count == kOverflowed ? overflow_.at(buffer) : count;
  }

  internal::FlatCounts<uint8_t> counts_;
  uint32_t nbuffers_;
  absl::flat_hash_map<BufferId, int32_t> overflow_;
};

static_assert(RefCountTable<ByteRefCount>);

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_BYTE_REFCOUNT_H_
