// Layout `hash`: the overflow paths, clock eviction and the O(1) leak check.
#include "buffers/hash_refcount.h"

#include <algorithm>


namespace backendlab::buffers {

absl::StatusOr<HashRefCount> HashRefCount::Create(uint32_t nbuffers) {
  if (absl::Status s = ValidateNBuffers(nbuffers); !s.ok()) return s;
  return HashRefCount(nbuffers);
}

absl::Status HashRefCount::PinSlow(BufferId buffer) {
  const absl::StatusOr<int32_t> taken = internal::TakeFromOverflow(overflow_, buffer);
  if (!taken.ok()) return taken.status();
  const int32_t count = *taken;
  int slot;
  if (used_ != kAllUsed) {
    slot = __builtin_ctz(~used_);
  } else {
    // All 8 in use: the clock hand's victim moves to the overflow map.
    slot = static_cast<int>(clock_++ % kInlineEntries);
    overflow_.emplace(static_cast<BufferId>(entries_[slot].buffer), entries_[slot].count);
  }
  UseEntry(slot, buffer, count + 1);
  return absl::OkStatus();
}

absl::StatusOr<int32_t> HashRefCount::Count(BufferId buffer) const {
  if (buffer >= nbuffers_) return internal::OutOfRange(buffer, nbuffers_);
  if (int slot = FindInline(buffer); slot >= 0) return entries_[slot].count;
  return internal::OverflowCount(overflow_, buffer);
}

size_t HashRefCount::HeldCount() const {
  return overflow_.size() + static_cast<size_t>(__builtin_popcount(used_));
}

std::vector<Leak> HashRefCount::FindLeaks(ScanKernel /*kernel: nothing to scan*/) const {
  std::vector<Leak> leaks;
  for (uint32_t m = used_; m != 0; m &= m - 1) {
    const Entry& e = entries_[__builtin_ctz(m)];
    leaks.push_back({static_cast<BufferId>(e.buffer), e.count});
  }
  return internal::WithOverflowLeaks(std::move(leaks), overflow_);
}

void HashRefCount::ReleaseAll() {
  std::fill(std::begin(entries_), std::end(entries_), Entry{-1, 0});
  tags_ = 0;
  used_ = 0;
  overflow_.clear();
}

size_t HashRefCount::MemoryBytes() const {
  return sizeof(*this) + internal::OverflowMemoryBytes(overflow_);
}

}  // namespace backendlab::buffers
