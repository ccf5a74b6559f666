// Layout `hash`: the overflow paths, clock eviction and the O(1) leak check.
#include "buffers/hash_refcount.h"

#include <algorithm>


namespace backendlab::buffers {

absl::StatusOr<HashRefCount> HashRefCount::Create(uint32_t nbuffers) {
  if (absl::Status s = ValidateNBuffers(nbuffers); !s.ok()) return s;
  return HashRefCount(nbuffers);
}

absl::Status HashRefCount::PinSlow(BufferId buffer) {
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
    slot = __builtin_ctz(~used_);
  } else {
    // All 8 in use: the clock hand's victim moves to the overflow map.
    slot = static_cast<int>(clock_++ % kInlineEntries);
    overflow_.emplace(static_cast<BufferId>(entries_[slot].buffer), entries_[slot].count);
  }
  UseEntry(slot, buffer, count + 1);
  return absl::OkStatus();
}

absl::Status HashRefCount::UnpinOverflowed(BufferId buffer) {
  auto it = overflow_.find(buffer);
  if (it == overflow_.end()) return internal::NotPinned(buffer);
  if (--it->second == 0) overflow_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<int32_t> HashRefCount::Count(BufferId buffer) const {
  if (buffer >= nbuffers_) return internal::OutOfRange(buffer, nbuffers_);
  if (int slot = FindInline(buffer); slot >= 0) return entries_[slot].count;
  auto it = overflow_.find(buffer);
  return it == overflow_.end() ? 0 : it->second;
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
  if (!overflow_.empty()) {
    for (const auto& [buffer, count] : overflow_) leaks.push_back({buffer, count});
  }
  if (leaks.size() > 1) {
    std::sort(leaks.begin(), leaks.end(), [](const Leak& a, const Leak& b) { return a.buffer < b.buffer; });
  }
  return leaks;
}

void HashRefCount::ReleaseAll() {
  std::fill(std::begin(entries_), std::end(entries_), Entry{-1, 0});
  tags_ = 0;
  used_ = 0;
  overflow_.clear();
}

size_t HashRefCount::MemoryBytes() const {
  return sizeof(*this) + overflow_.capacity() * (sizeof(std::pair<const BufferId, int32_t>) + 1);
}

}  // namespace backendlab::buffers
