// Layout `array-touched`: PostgreSQL <= 9.4's array, whose exit check visits
// only the pages of the table that were ever written.
#ifndef BACKENDLAB_BUFFERS_ARRAY_TOUCHED_REFCOUNT_H_
#define BACKENDLAB_BUFFERS_ARRAY_TOUCHED_REFCOUNT_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "buffers/internal/flat_table.h"
#include "buffers/refcount_table.h"

namespace backendlab::buffers {

// The `array` table (fresh pages, one int32 per buffer, pin and unpin index it
// directly) and a bitmap of the 4 kB memory pages it spans: a page's bit is
// set by the first pin that writes into it, so the exit check scans the pages
// with a bit set and never reads — never faults in — the others. The pages
// are the memory's (the table need not start on a page boundary), so a page
// scanned is a page a pin faulted in. The bitmap is one bit per 1,024
// buffers: 128 bytes at 8GB of shared_buffers, 512 at 32GB.
//
// Invariants: (1) every entry with a non-zero count lies in a page whose bit
// is set; (2) a bit is set only by a pin; (3) the exit check reads only the
// bitmap and the pages whose bit is set.
//
// The bitmap rather than mincore(2) on the table: mincore needs a system call
// and a vector of one byte per page at every exit check, it answers
// "resident", not "written" (a table small enough to come from the heap
// shares pages that are resident for other reasons), and the bitmap costs a
// pin one predictable test of a word already in cache.
class ArrayTouchedRefCount {
 public:
  static constexpr Layout kLayout = Layout::kArrayTouched;
  static constexpr int kPageShift = 12;  // 4 kB pages

  static absl::StatusOr<ArrayTouchedRefCount> Create(uint32_t nbuffers);

  absl::Status Pin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    int32_t& count = counts_[buffer];
    if (count == std::numeric_limits<int32_t>::max()) [[unlikely]] return internal::CountOverflow(buffer);
    const size_t page = (reinterpret_cast<uintptr_t>(&count) >> kPageShift) - first_page_;
    uint64_t& word = touched_[page / 64];
    const uint64_t bit = uint64_t{1} << (page % 64);
    if ((word & bit) == 0) [[unlikely]] word |= bit;  // the page's first pin
    ++count;
    return absl::OkStatus();
  }

  absl::Status Unpin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    int32_t& count = counts_[buffer];
    if (count == 0) [[unlikely]] return internal::NotPinned(buffer);
    --count;
    return absl::OkStatus();
  }

  absl::StatusOr<int32_t> Count(BufferId buffer) const {
    if (buffer >= nbuffers_) return internal::OutOfRange(buffer, nbuffers_);
    return counts_[buffer];
  }

  size_t HeldCount() const;
  // O(touched pages): each page with its bit set is scanned with `kernel`.
  std::vector<Leak> FindLeaks(ScanKernel kernel) const;
  void ReleaseAll();
  size_t MemoryBytes() const {
    return sizeof(*this) + size_t{nbuffers_} * sizeof(int32_t) + touched_words_ * sizeof(uint64_t);
  }
  uint32_t nbuffers() const { return nbuffers_; }
  // Pages of the table with their bit set: what the exit check will read.
  size_t TouchedPages() const;

  // Test seam: set a count directly (e.g. near INT32_MAX) without 2^31 pins;
  // its page is marked as a pin would mark it.
  void SetCountForTesting(BufferId buffer, int32_t count) {
    int32_t& entry = counts_[buffer];
    const size_t page = (reinterpret_cast<uintptr_t>(&entry) >> kPageShift) - first_page_;
    touched_[page / 64] |= uint64_t{1} << (page % 64);
    entry = count;
  }

 private:
  ArrayTouchedRefCount(internal::FlatCounts<int32_t> counts, std::unique_ptr<uint64_t[]> touched, size_t words,
                       uint32_t nbuffers)
      : counts_(std::move(counts)),
        touched_(std::move(touched)),
        touched_words_(words),
        first_page_(reinterpret_cast<uintptr_t>(counts_.get()) >> kPageShift),
        nbuffers_(nbuffers) {}

  internal::FlatCounts<int32_t> counts_;
  std::unique_ptr<uint64_t[]> touched_;  // bit p: the p-th memory page of counts_ was written by a pin
  size_t touched_words_;
  uintptr_t first_page_;                 // the memory page counts_[0] lies in
  uint32_t nbuffers_;
};

static_assert(RefCountTable<ArrayTouchedRefCount>);

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_ARRAY_TOUCHED_REFCOUNT_H_
