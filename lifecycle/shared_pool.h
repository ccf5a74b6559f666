// The shared buffer pool: one MAP_SHARED mapping of shared_buffers bytes made
// by the postmaster before any fork, as PostgreSQL's shared memory is. It is
// MAP_NORESERVE and never pre-touched: only the buffers backends pin are
// faulted in, so fork copies its page tables, not its pages.
#ifndef BACKENDLAB_LIFECYCLE_SHARED_POOL_H_
#define BACKENDLAB_LIFECYCLE_SHARED_POOL_H_

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "buffers/shared_buffers.h"

namespace backendlab::lifecycle {

class SharedPool {
 public:
  static absl::StatusOr<SharedPool> Create(const buffers::SharedBuffers& size);
  SharedPool(SharedPool&& other) noexcept;
  SharedPool& operator=(SharedPool&&) = delete;
  ~SharedPool();

  uint32_t nbuffers() const { return nbuffers_; }
  // The shared pin count in buffer `b`'s header (its first 4 bytes here),
  // changed atomically as PinBuffer/UnpinBuffer change BufferDesc's state.
  std::atomic<uint32_t>& SharedRefCount(uint32_t b) {
    return *reinterpret_cast<std::atomic<uint32_t>*>(base_ + uint64_t{b} * buffers::kBlockSize);
  }

 private:
  SharedPool(char* base, uint64_t bytes, uint32_t nbuffers) : base_(base), bytes_(bytes), nbuffers_(nbuffers) {}
  char* base_;
  uint64_t bytes_;
  uint32_t nbuffers_;
};

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_SHARED_POOL_H_
