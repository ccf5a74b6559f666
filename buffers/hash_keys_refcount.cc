// Layout `hash-keys`: the overflow paths, clock eviction and the O(1) leak check.
#include "buffers/hash_keys_refcount.h"

#include <algorithm>

namespace backendlab::buffers {

absl::StatusOr<HashKeysRefCount> HashKeysRefCount::Create(uint32_t nbuffers) {
  if (absl::Status s = ValidateNBuffers(nbuffers); !s.ok()) return s;
  return HashKeysRefCount(nbuffers);
}

absl::Status HashKeysRefCount::PinSlow(BufferId buffer) {
  const absl::StatusOr<int32_t> taken = internal::TakeFromOverflow(overflow_, buffer);
  if (!taken.ok()) return taken.status();
  const int32_t count = *taken;
  int slot;
  if (used_ != kAllUsed) {
    const uint32_t reuse = Matches(buffer) & ~used_;
    slot = reuse != 0 ? __builtin_ctz(reuse) : __builtin_ctz(~used_);
  } else {
    // All 8 in use: the clock hand's victim moves to the overflow map.
    slot = static_cast<int>(clock_++ % kInlineEntries);
    overflow_.emplace(static_cast<BufferId>(keys_[slot]), counts_[slot]);
  }
  if (keys_[slot] != static_cast<int32_t>(buffer)) keys_[slot] = static_cast<int32_t>(buffer);
  counts_[slot] = count + 1;
  used_ |= 1u << slot;
  last_ = slot;
  return absl::OkStatus();
}

absl::StatusOr<int32_t> HashKeysRefCount::Count(BufferId buffer) const {
  if (buffer >= nbuffers_) return internal::OutOfRange(buffer, nbuffers_);
  if (const uint32_t held = Matches(buffer) & used_; held != 0) return counts_[__builtin_ctz(held)];
  return internal::OverflowCount(overflow_, buffer);
}

size_t HashKeysRefCount::HeldCount() const {
  return overflow_.size() + static_cast<size_t>(__builtin_popcount(used_));
}

std::vector<Leak> HashKeysRefCount::FindLeaks(ScanKernel /*kernel: nothing to scan*/) const {
  std::vector<Leak> leaks;
  for (uint32_t m = used_; m != 0; m &= m - 1) {
    const int slot = __builtin_ctz(m);
    leaks.push_back({static_cast<BufferId>(keys_[slot]), counts_[slot]});
  }
  return internal::WithOverflowLeaks(std::move(leaks), overflow_);
}

void HashKeysRefCount::ReleaseAll() {
  std::fill(std::begin(keys_), std::end(keys_), -1);
  std::fill(std::begin(counts_), std::end(counts_), 0);
  used_ = 0;
  last_ = 0;
  overflow_.clear();
}

size_t HashKeysRefCount::MemoryBytes() const {
  return sizeof(*this) + internal::OverflowMemoryBytes(overflow_);
}

}  // namespace backendlab::buffers
