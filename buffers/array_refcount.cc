// Layout `array`: allocation and the full-table scans.
#include "buffers/array_refcount.h"

namespace backendlab::buffers {

absl::StatusOr<ArrayRefCount> ArrayRefCount::Create(uint32_t nbuffers) {
  absl::StatusOr<internal::FlatCounts<int32_t>> counts = internal::AllocateCounts<int32_t>(nbuffers, kLayout);
  if (!counts.ok()) return counts.status();
  return ArrayRefCount(*std::move(counts), nbuffers);
}

size_t ArrayRefCount::HeldCount() const { return internal::CountNonZero(counts_.get(), nbuffers_); }

std::vector<Leak> ArrayRefCount::FindLeaks(ScanKernel kernel) const {
  return internal::ScanForLeaks(kernel, counts_.get(), nbuffers_, [this](BufferId b) { return counts_[b]; });
}

void ArrayRefCount::ReleaseAll() {
  // Clear only what is pinned: a memset would write, and so fault in, every
  // page of a table that is mostly still the kernel's zero page.
  for (const Leak& leak : FindLeaks(ScanKernel::kSimd)) counts_[leak.buffer] = 0;
}

}  // namespace backendlab::buffers
