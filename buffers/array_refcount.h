// Layout `array`: one int32 per shared buffer, PostgreSQL <= 9.4's PrivateRefCount.
#ifndef BACKENDLAB_BUFFERS_ARRAY_REFCOUNT_H_
#define BACKENDLAB_BUFFERS_ARRAY_REFCOUNT_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "buffers/internal/flat_table.h"
#include "buffers/refcount_table.h"

namespace backendlab::buffers {

// Allocated fresh at backend start (mmap, as InitBufferPoolAccess()'s calloc
// of a large table is; internal/flat_table.h says why always): a table
// of 4 x NBuffers bytes (512 KiB per GB of shared_buffers) whose untouched pages
// stay the kernel's zero page until first touched. Pin/unpin index the array
// directly; the exit check must read all of it.
class ArrayRefCount {
 public:
  static constexpr Layout kLayout = Layout::kArray;

  static absl::StatusOr<ArrayRefCount> Create(uint32_t nbuffers);

  absl::Status Pin(BufferId buffer) {
    if (buffer >= nbuffers_) [[unlikely]] return internal::OutOfRange(buffer, nbuffers_);
    int32_t& count = counts_[buffer];
    if (count == std::numeric_limits<int32_t>::max()) [[unlikely]] return internal::CountOverflow(buffer);
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
  std::vector<Leak> FindLeaks(ScanKernel kernel) const;
  void ReleaseAll();
  size_t MemoryBytes() const { return sizeof(*this) + size_t{nbuffers_} * sizeof(int32_t); }
  uint32_t nbuffers() const { return nbuffers_; }

  // The raw counts, for scan benchmarks that read the table the exit check reads.
  const int32_t* data() const { return counts_.get(); }

  // Test seam: set a count directly (e.g. near INT32_MAX) without 2^31 pins.
  void SetCountForTesting(BufferId buffer, int32_t count) { counts_[buffer] = count; }

 private:
  ArrayRefCount(internal::FlatCounts<int32_t> counts, uint32_t nbuffers)
      : counts_(std::move(counts)), nbuffers_(nbuffers) {}

  internal::FlatCounts<int32_t> counts_;
  uint32_t nbuffers_;
};

static_assert(RefCountTable<ArrayRefCount>);

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_ARRAY_REFCOUNT_H_
