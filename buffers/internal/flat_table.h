// Shared by the flat, one-entry-per-buffer layouts (`array`, `bytes`): their
// allocation and the scans that find pinned entries. Not for other modules.
#ifndef BACKENDLAB_BUFFERS_INTERNAL_FLAT_TABLE_H_
#define BACKENDLAB_BUFFERS_INTERNAL_FLAT_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/private_pages.h"
#include "buffers/refcount_table.h"
#include "buffers/scan_kernels.h"

namespace backendlab::buffers::internal {

// Unmaps a table of `bytes` (rounded up to pages by the kernel).
struct UnmapDeleter {
  size_t bytes = 0;
  void operator()(void* p) const { UnmapPrivatePages(p, bytes); }
};

template <typename Element>
using FlatCounts = std::unique_ptr<Element[], UnmapDeleter>;

// Fresh anonymous pages, the kernel's zero page until touched: what a newly
// started backend's calloc of its table gets (InitBufferPoolAccess() in
// PostgreSQL <= 9.4: a large table is an mmap of its own, a small one comes
// from heap a young process has not touched). Taken with mmap, whatever the
// size, so that this process's history (a postmaster that freed big blocks,
// glibc's threshold raised by an earlier free, a test run before) cannot
// hand the table heap pages already faulted in, which calloc would memset:
// the faults of a table are then the same in every run. (A backend thread
// with a reused arena gets an earlier backend's mapping, zeroed:
// base/private_pages.h.)
template <typename Element>
absl::StatusOr<FlatCounts<Element>> AllocateCounts(uint32_t nbuffers, Layout layout) {
  if (absl::Status s = ValidateNBuffers(nbuffers); !s.ok()) return s;
  const size_t bytes = size_t{nbuffers} * sizeof(Element);
  void* counts = MapPrivatePages(bytes);
  if (counts == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory allocating ", bytes, " bytes for the ",
                                                     std::string(LayoutName(layout)), " refcount table"));
  }
  return FlatCounts<Element>(static_cast<Element*>(counts), UnmapDeleter{bytes});
}

// Every non-zero entry as a Leak, in ascending order; count_of(i) gives the
// true count of entry i (the `bytes` layout looks up its overflow map).
template <typename Element, typename CountOf>
std::vector<Leak> ScanForLeaks(ScanKernel kernel, const Element* counts, uint32_t nbuffers, CountOf count_of) {
  std::vector<Leak> leaks;
  for (size_t i = FindNonZero(kernel, counts, nbuffers); i < nbuffers;
       i = i + 1 + FindNonZero(kernel, counts + i + 1, nbuffers - i - 1)) {
    leaks.push_back({static_cast<BufferId>(i), count_of(static_cast<BufferId>(i))});
  }
  return leaks;
}

template <typename Element>
size_t CountNonZero(const Element* counts, uint32_t nbuffers) {
  size_t held = 0;
  for (uint32_t i = 0; i < nbuffers; ++i) held += counts[i] != 0;
  return held;
}

}  // namespace backendlab::buffers::internal

#endif  // BACKENDLAB_BUFFERS_INTERNAL_FLAT_TABLE_H_
