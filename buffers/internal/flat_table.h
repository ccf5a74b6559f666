// Shared by the flat, one-entry-per-buffer layouts (`array`, `bytes`): their
// allocation and the scans that find pinned entries. Not for other modules.
#ifndef BACKENDLAB_BUFFERS_INTERNAL_FLAT_TABLE_H_
#define BACKENDLAB_BUFFERS_INTERNAL_FLAT_TABLE_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "buffers/refcount_table.h"
#include "buffers/scan_kernels.h"

namespace backendlab::buffers::internal {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

template <typename Element>
using FlatCounts = std::unique_ptr<Element[], FreeDeleter>;

// calloc, as InitBufferPoolAccess() did: a large table is a fresh mapping
// whose pages stay the kernel's zero page until touched.
template <typename Element>
absl::StatusOr<FlatCounts<Element>> AllocateCounts(uint32_t nbuffers, Layout layout) {
  if (absl::Status s = ValidateNBuffers(nbuffers); !s.ok()) return s;
  void* counts = std::calloc(nbuffers, sizeof(Element));
  if (counts == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory allocating ", size_t{nbuffers} * sizeof(Element),
                                                     " bytes for the ", std::string(LayoutName(layout)),
                                                     " refcount table"));
  }
  return FlatCounts<Element>(static_cast<Element*>(counts));
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
