// Layout `hash`: PostgreSQL >= 9.5's PrivateRefCount — 8 inline entries in one
// cache line, a clock hand, and an overflow hash table for the rare backend
// that holds more than 8 pins at once.
#ifndef BACKENDLAB_BUFFERS_HASH_REFCOUNT_H_
#define BACKENDLAB_BUFFERS_HASH_REFCOUNT_H_

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "buffers/internal/overflow_map.h"
#include "buffers/refcount_table.h"

namespace backendlab::buffers {

// Invariants: (1) a buffer is in at most one place, an inline entry or the
// overflow map; (2) an inline entry is in use exactly when its bit is set in
// used_, and then its count is >= 1, as is every map entry's; (3) the memory
// held does not depend on NBuffers. A pin of a buffer found in the map moves it
// back into an inline entry (PostgreSQL's do_move), evicting the clock hand's
// victim to the map if all 8 are in use.
//
// One refinement over 9.5 keeps the hot path short: a one-byte tag per entry
// (low bits of the buffer id), the 8 tags packed in one 64-bit word, so a search
// is a handful of ALU operations on that word instead of a loop over entries —
// and a miss, which every pin of a new buffer is, usually touches no entry.
// (PostgreSQL 19 made the same search vectorisable by splitting out the keys.)
// The tags are a register-sized word updated whole, not a vector: a vector load
// right after a pin's 4-byte store cannot be forwarded from the store buffer and
// stalls longer than the whole search takes. A one-entry "last used" index in
// front (also in PostgreSQL 19) measured no faster here, so it is left out.
class HashRefCount {
 public:
  static constexpr Layout kLayout = Layout::kHash;
  static constexpr int kInlineEntries = 8;

  struct Entry {
    int32_t buffer;  // meaningful only while the entry's used_ bit is set
    int32_t count;
  };
  static_assert(sizeof(Entry) * kInlineEntries == 64,
                "the 8 inline entries must fill one 64-byte cache line, as PostgreSQL's "
                "REFCOUNT_ARRAY_ENTRIES 8 does: one line to search on every pin");

  static absl::StatusOr<HashRefCount> Create(uint32_t nbuffers);

  absl::Status Pin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    int slot = FindInline(buffer);
    if (slot >= 0) [[likely]] {
      if (entries_[slot].count == std::numeric_limits<int32_t>::max()) [[unlikely]] {
        return internal::CountOverflow(buffer);
      }
      ++entries_[slot].count;
      return absl::OkStatus();
    }
    // Not held inline. With an empty map (the common case) it is not held at
    // all, and a free entry takes it.
    if (overflow_.empty() && used_ != kAllUsed) [[likely]] {
      UseEntry(__builtin_ctz(~used_), buffer, 1);
      return absl::OkStatus();
    }
    return PinSlow(buffer);
  }

  absl::Status Unpin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    const int slot = FindInline(buffer);
    if (slot >= 0) [[likely]] {
      if (--entries_[slot].count == 0) used_ &= ~(1u << slot);
      return absl::OkStatus();
    }
    return internal::UnpinOverflowed(overflow_, buffer);
  }

  absl::StatusOr<int32_t> Count(BufferId buffer) const;
  size_t HeldCount() const;
  // O(1) when the map is empty: 8 entries are read, NBuffers never matters.
  std::vector<Leak> FindLeaks(ScanKernel kernel) const;
  void ReleaseAll();
  size_t MemoryBytes() const;
  uint32_t nbuffers() const { return nbuffers_; }
  size_t OverflowEntries() const { return overflow_.size(); }

 private:
  static constexpr uint32_t kAllUsed = (1u << kInlineEntries) - 1;

  explicit HashRefCount(uint32_t nbuffers) : nbuffers_(nbuffers) { ReleaseAll(); }

  bool Holds(int slot, BufferId buffer) const {
    return (used_ >> slot & 1u) != 0 && entries_[slot].buffer == static_cast<int32_t>(buffer);
  }

  static constexpr uint64_t kLowBytes = 0x0101010101010101;
  static constexpr uint64_t kHighBits = 0x8080808080808080;
  static uint64_t TagOf(BufferId buffer) { return (buffer ^ (buffer >> 8)) & 0xFF; }

  // The inline entry holding `buffer`, or -1.
  int FindInline(BufferId buffer) const {
    // Bytes of `x` that are zero are the entries whose tag matches. The
    // zero-byte test can also flag a byte just above a true zero; the entry
    // check below sorts those out, as it does stale tags of free entries.
    const uint64_t x = tags_ ^ (TagOf(buffer) * kLowBytes);
    for (uint64_t m = (x - kLowBytes) & ~x & kHighBits; m != 0; m &= m - 1) {
      const int slot = __builtin_ctzll(m) / 8;
      if (Holds(slot, buffer)) return slot;
    }
    return -1;
  }

  void UseEntry(int slot, BufferId buffer, int32_t count) {
    entries_[slot] = {static_cast<int32_t>(buffer), count};
    const int shift = slot * 8;
    tags_ = (tags_ & ~(uint64_t{0xFF} << shift)) | (TagOf(buffer) << shift);
    used_ |= 1u << slot;
  }

  absl::Status PinSlow(BufferId buffer);

  alignas(64) Entry entries_[kInlineEntries];
  uint64_t tags_ = 0;     // byte i: TagOf(entries_[i].buffer), stale when i is free
  uint32_t used_ = 0;     // bit i set: entries_[i] holds a pin
  uint32_t clock_ = 0;    // next inline entry to evict when all are in use
  uint32_t nbuffers_;
  internal::OverflowMap overflow_;
};

static_assert(RefCountTable<HashRefCount>);

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_HASH_REFCOUNT_H_
