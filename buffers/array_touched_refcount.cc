// Layout `array-touched`: allocation, and the scans of the touched pages only.
#include "buffers/array_touched_refcount.h"

#include <algorithm>

namespace backendlab::buffers {

absl::StatusOr<ArrayTouchedRefCount> ArrayTouchedRefCount::Create(uint32_t nbuffers) {
  absl::StatusOr<internal::FlatCounts<int32_t>> counts = internal::AllocateCounts<int32_t>(nbuffers, kLayout);
  if (!counts.ok()) return counts.status();
  const auto first = reinterpret_cast<uintptr_t>(counts->get());
  const uintptr_t last = first + size_t{nbuffers} * sizeof(int32_t) - 1;
  const size_t pages = (last >> kPageShift) - (first >> kPageShift) + 1;
  const size_t words = (pages + 63) / 64;
  return ArrayTouchedRefCount(*std::move(counts), std::make_unique<uint64_t[]>(words), words, nbuffers);
}

size_t ArrayTouchedRefCount::TouchedPages() const {
  size_t pages = 0;
  for (size_t w = 0; w < touched_words_; ++w) pages += static_cast<size_t>(__builtin_popcountll(touched_[w]));
  return pages;
}

size_t ArrayTouchedRefCount::HeldCount() const { return FindLeaks(ScanKernel::kSimd).size(); }

std::vector<Leak> ArrayTouchedRefCount::FindLeaks(ScanKernel kernel) const {
  std::vector<Leak> leaks;
  for (size_t w = 0; w < touched_words_; ++w) {
    for (uint64_t bits = touched_[w]; bits != 0; bits &= bits - 1) {
      // The entries of the table inside memory page `page`.
      const size_t page = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
      const uintptr_t table = reinterpret_cast<uintptr_t>(counts_.get());
      const uintptr_t page_start = (first_page_ + page) << kPageShift;
      const size_t begin = page_start <= table ? 0 : (page_start - table) / sizeof(int32_t);
      const size_t end = std::min<size_t>((page_start + (uintptr_t{1} << kPageShift) - table) / sizeof(int32_t), nbuffers_);
      for (std::vector<Leak> found = internal::ScanForLeaks(kernel, counts_.get() + begin,
                                                            static_cast<uint32_t>(end - begin),
                                                            [&](BufferId b) { return counts_[begin + b]; });
           Leak& leak : found) {
        leak.buffer += static_cast<BufferId>(begin);
        leaks.push_back(leak);
      }
    }
  }
  return leaks;
}

void ArrayTouchedRefCount::ReleaseAll() {
  // Every pinned entry is in a touched page: zero those entries, then forget
  // the pages, which hold only zeros again.
  for (const Leak& leak : FindLeaks(ScanKernel::kSimd)) counts_[leak.buffer] = 0;
  std::fill(touched_.get(), touched_.get() + touched_words_, uint64_t{0});
}

}  // namespace backendlab::buffers
