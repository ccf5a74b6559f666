// Layout `hash-keys`: the PrivateRefCount PostgreSQL adopted after 9.5's (the
// development of PostgreSQL 19) — the 8 inline buffer ids in an array of their
// own (PrivateRefCountArrayKeys), apart from the counts (PrivateRefCountArray),
// so one vector compare finds a buffer; a one-entry cache of the last entry
// used (PrivateRefCountEntryLast), checked first; and the overflow in a hash
// table.
#ifndef BACKENDLAB_BUFFERS_HASH_KEYS_REFCOUNT_H_
#define BACKENDLAB_BUFFERS_HASH_KEYS_REFCOUNT_H_

#include <emmintrin.h>

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
// held does not depend on NBuffers; (4) keys_ is written only when an entry
// is claimed for a buffer it does not already name (or by ReleaseAll) — never
// on a count change, never when an unpin frees an entry (a free entry keeps
// its stale key, masked out by used_); (5) no two entries name the same
// buffer, and a free entry names a buffer only if that buffer is held nowhere
// (a buffer is pinned into the free entry that names it if there is one, and
// leaves an entry for the map only by eviction, which renames the entry at
// once).
//
// (4) is about the store-to-load forwarding stall: a 16-byte load of keys_
// right after a 4-byte store into it cannot be forwarded and waits for the
// store to retire. Counts live apart, so the pins and unpins of a held buffer
// never store into what the search loads; and a buffer pinned again right
// after its last unpin finds its stale key still in place and reuses the
// entry without a store.
//
// The search is SSE2 (two 4-lane compares, part of every x86-64): no run-time
// dispatch on the hot path. The overflow is Abseil's flat_hash_map (Swiss
// table, open addressing), as `hash`'s is: PostgreSQL moved its overflow from
// dynahash to simplehash, the same kind of table; the overflow is reached only
// by a backend holding more than 8 pins, and a table of our own was not built.
class HashKeysRefCount {
 public:
  static constexpr Layout kLayout = Layout::kHashKeys;
  static constexpr int kInlineEntries = 8;

  static absl::StatusOr<HashKeysRefCount> Create(uint32_t nbuffers);

  absl::Status Pin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    // The last entry used first: a scalar load, forwarded from a store to the
    // same entry if there was one. Free, it still names this buffer only if
    // the buffer is held nowhere (5): revived without a search.
    if (keys_[last_] == static_cast<int32_t>(buffer)) {
      if ((used_ >> last_ & 1u) == 0) {
        counts_[last_] = 1;
        used_ |= 1u << last_;
        return absl::OkStatus();
      }
      if (counts_[last_] == std::numeric_limits<int32_t>::max()) [[unlikely]] return internal::CountOverflow(buffer);
      ++counts_[last_];
      return absl::OkStatus();
    }
    const uint32_t matches = Matches(buffer);
    const uint32_t held = matches & used_;
    if (held != 0) {
      const int slot = __builtin_ctz(held);
      if (counts_[slot] == std::numeric_limits<int32_t>::max()) [[unlikely]] return internal::CountOverflow(buffer);
      ++counts_[slot];
      last_ = slot;
      return absl::OkStatus();
    }
    // Not held inline. With an empty map (the common case) it is not held at
    // all: a free entry takes it, the one whose stale key is this buffer if
    // there is one (no store into keys_).
    if (overflow_.empty() && used_ != kAllUsed) [[likely]] {
      const uint32_t reuse = matches & ~used_;
      const int slot = reuse != 0 ? __builtin_ctz(reuse) : __builtin_ctz(~used_);
      if (reuse == 0) keys_[slot] = static_cast<int32_t>(buffer);
      counts_[slot] = 1;
      used_ |= 1u << slot;
      last_ = slot;
      return absl::OkStatus();
    }
    return PinSlow(buffer);
  }

  absl::Status Unpin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    int slot = last_;
    if (keys_[slot] != static_cast<int32_t>(buffer) || (used_ >> slot & 1u) == 0) [[unlikely]] {
      const uint32_t held = Matches(buffer) & used_;
      if (held == 0) return internal::UnpinOverflowed(overflow_, buffer);
      slot = __builtin_ctz(held);
      last_ = slot;
    }
    if (--counts_[slot] == 0) used_ &= ~(1u << slot);
    return absl::OkStatus();
  }

  absl::StatusOr<int32_t> Count(BufferId buffer) const;
  size_t HeldCount() const;
  // O(1) when the map is empty: 8 entries are read, NBuffers never matters.
  std::vector<Leak> FindLeaks(ScanKernel kernel) const;
  void ReleaseAll();
  size_t MemoryBytes() const;
  uint32_t nbuffers() const { return nbuffers_; }
  size_t OverflowEntries() const { return overflow_.size(); }

  // Test seam: hold `buffer` inline with `count` (>= 1, e.g. near INT32_MAX)
  // without 2^31 pins. The table must hold fewer than 8 buffers.
  void SetCountForTesting(BufferId buffer, int32_t count) {
    if ((Matches(buffer) & used_) == 0 && !Pin(buffer).ok()) return;
    const uint32_t held = Matches(buffer) & used_;
    if (held != 0 && count >= 1) counts_[__builtin_ctz(held)] = count;
  }

 private:
  static constexpr uint32_t kAllUsed = (1u << kInlineEntries) - 1;

  explicit HashKeysRefCount(uint32_t nbuffers) : nbuffers_(nbuffers) { ReleaseAll(); }

  // Bit i set: keys_[i] == buffer (used or not).
  uint32_t Matches(BufferId buffer) const {
    const __m128i key = _mm_set1_epi32(static_cast<int32_t>(buffer));
    const __m128i lo = _mm_cmpeq_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(keys_)), key);
    const __m128i hi = _mm_cmpeq_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(keys_ + 4)), key);
    return static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(lo)) |
                                 (_mm_movemask_ps(_mm_castsi128_ps(hi)) << 4));
  }

  absl::Status PinSlow(BufferId buffer);

  alignas(32) int32_t keys_[kInlineEntries];  // PrivateRefCountArrayKeys; -1 never matches a buffer
  int32_t counts_[kInlineEntries];            // PrivateRefCountArray's counts
  uint32_t used_ = 0;                         // bit i set: entry i holds a pin
  int last_ = 0;                              // PrivateRefCountEntryLast
  uint32_t clock_ = 0;                        // next inline entry to evict when all are in use
  uint32_t nbuffers_;
  internal::OverflowMap overflow_;
};

static_assert(RefCountTable<HashKeysRefCount>);

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_HASH_KEYS_REFCOUNT_H_
