// The shared buffer pool mapping.
#include "lifecycle/shared_pool.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace backendlab::lifecycle {

static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "shared pin counts are updated by many processes without locks");

absl::StatusOr<SharedPool> SharedPool::Create(const buffers::SharedBuffers& size) {
  void* base = mmap(nullptr, size.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot map a shared buffer pool of ",
                                                     buffers::FormatSize(size.bytes), ": ", std::strerror(errno)));
  }
  return SharedPool(static_cast<char*>(base), size.bytes, size.nbuffers);
}

SharedPool::SharedPool(SharedPool&& other) noexcept
    : base_(other.base_), bytes_(other.bytes_), nbuffers_(other.nbuffers_) {
  other.base_ = nullptr;
}

SharedPool::~SharedPool() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

}  // namespace backendlab::lifecycle
