// Layout `hash-keys`: the overflow paths, clock eviction and the O(1) leak check.
#include "buffers/hash_keys_refcount.h"

#include <algorithm>

namespace backendlab::buffers {

absl::StatusOr<HashKeysRefCount> HashKeysRefCount::Create(uint32_t nbuffers) {
  if (absl::Status s = ValidateNBuffers(nbuffers); !s.ok()) return s;
  return HashKeysRefCount(nbuffers);
}

absl::Status HashKeysRefCount::PinSlow(BufferId buffer) {
  int32_t count = 0;
  if (!overflow_.empty()) {
    if (auto it = overflow_.find(buffer); it != overflow_.end()) {
      if (it->second == std::numeric_limits<int32_t>::max()) return internal::CountOverflow(buffer);
      count = it->second;
      overflow_.erase(it);
    }
  }
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

absl::Status HashKeysRefCount::UnpinOverflowed(BufferId buffer) {
  auto it = overflow_.find(buffer);
  if (it == overflow_.end()) return internal::NotPinned(buffer);
  if (--it->second == 0) overflow_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<int32_t> HashKeysRefCount::Count(BufferId buffer) const {
  if (buffer >= nbuffers_) return internal::OutOfRange(buffer, nbuffers_);
  if (const uint32_t held = Matches(buffer) & used_; held != 0) return counts_[__builtin_ctz(held)];
  auto it = overflow_.find(buffer);
  return it == overflow_.end() ? 0 : it->second;
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
  if (!overflow_.empty()) {
    for (const auto& [buffer, count] : overflow_) leaks.push_back({buffer, count});
  }
  if (leaks.size() > 1) {
    std::sort(leaks.begin(), leaks.end(), [](const Leak& a, const Leak& b) { return a.buffer < b.buffer; });
  }
  return leaks;
}

void HashKeysRefCount::ReleaseAll() {
  std::fill(std::begin(keys_), std::end(keys_), -1);
  std::fill(std::begin(counts_), std::end(counts_), 0);
  used_ = 0;
  last_ = 0;
  overflow_.clear();
}

size_t HashKeysRefCount::MemoryBytes() const {
  return sizeof(*this) + overflow_.capacity() * (sizeof(std::pair<const BufferId, int32_t>) + 1);
}

}  // namespace backendlab::buffers
