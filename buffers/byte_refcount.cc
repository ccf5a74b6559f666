// Layout `bytes`: the overflow map paths and the quarter-size scans.
#include "buffers/byte_refcount.h"

#include "base/check.h"

namespace backendlab::buffers {

absl::StatusOr<ByteRefCount> ByteRefCount::Create(uint32_t nbuffers) {
  absl::StatusOr<internal::FlatCounts<uint8_t>> counts = internal::AllocateCounts<uint8_t>(nbuffers, kLayout);
  if (!counts.ok()) return counts.status();
  return ByteRefCount(*std::move(counts), nbuffers);
}

absl::Status ByteRefCount::PinSlow(BufferId buffer) {
  uint8_t& count = counts_[buffer];
  if (count == kOverflowed - 1) {  // 254 -> 255: the count moves to the map
    overflow_.emplace(buffer, int32_t{kOverflowed});
    count = kOverflowed;
    return absl::OkStatus();
  }
  int32_t& big = overflow_.at(buffer);
  if (big == std::numeric_limits<int32_t>::max()) return internal::CountOverflow(buffer);
  ++big;
  return absl::OkStatus();
}

absl::Status ByteRefCount::UnpinOverflowed(BufferId buffer) {
  auto it = overflow_.find(buffer);
  BACKENDLAB_CHECK(it != overflow_.end());
  if (--it->second == kOverflowed - 1) {  // 255 -> 254: back into the byte
    overflow_.erase(it);
    counts_[buffer] = kOverflowed - 1;
  }
  return absl::OkStatus();
}

size_t ByteRefCount::HeldCount() const { return internal::CountNonZero(counts_.get(), nbuffers_); }

std::vector<Leak> ByteRefCount::FindLeaks(ScanKernel kernel) const {
  return internal::ScanForLeaks(kernel, counts_.get(), nbuffers_, [this](BufferId b) { return CountOf(b); });
}

void ByteRefCount::ReleaseAll() {
  // As in ArrayRefCount: write only the pinned entries, never the zero pages.
  for (const Leak& leak : FindLeaks(ScanKernel::kSimd)) counts_[leak.buffer] = 0;
  overflow_.clear();
}

size_t ByteRefCount::MemoryBytes() const {
  return sizeof(*this) + nbuffers_ +
         overflow_.capacity() * (sizeof(std::pair<const BufferId, int32_t>) + 1);  // + control byte
}

void ByteRefCount::SetCountForTesting(BufferId buffer, int32_t count) {
  BACKENDLAB_CHECK(buffer < nbuffers_ && count >= 0);
  if (count >= kOverflowed) {
    overflow_[buffer] = count;
    counts_[buffer] = kOverflowed;
  } else {
    overflow_.erase(buffer);
    counts_[buffer] = static_cast<uint8_t>(count);
  }
}

}  // namespace backendlab::buffers
