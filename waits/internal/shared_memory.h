// Memory shared with the processes forked after it is mapped: an anonymous
// MAP_SHARED mapping. No name, no System V segment: it goes with the last
// process that maps it, so nothing of it outlives a run, whatever is killed.
#ifndef BACKENDLAB_WAITS_INTERNAL_SHARED_MEMORY_H_
#define BACKENDLAB_WAITS_INTERNAL_SHARED_MEMORY_H_

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace backendlab::waits::internal {

// `count` value-initialised Ts in one shared mapping. MAP_NORESERVE: pages
// untouched cost nothing, so a generous capacity is free.
template <typename T>
class SharedArray {
 public:
  static absl::StatusOr<SharedArray> Create(size_t count) {
    const size_t bytes = count * sizeof(T);
    void* p = mmap(nullptr, bytes == 0 ? 1 : bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) return absl::UnavailableError(absl::StrCat("mmap of ", bytes, " shared bytes: ", std::strerror(errno)));
    SharedArray a;
    a.data_ = static_cast<T*>(p);
    a.count_ = count;
    for (size_t i = 0; i < count; ++i) new (&a.data_[i]) T();
    return a;
  }

  SharedArray() = default;
  SharedArray(SharedArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  SharedArray& operator=(SharedArray&& other) noexcept {
    if (this != &other) {
      Unmap();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  ~SharedArray() { Unmap(); }

  T* data() const { return data_; }
  size_t size() const { return count_; }
  T& operator[](size_t i) const { return data_[i]; }

 private:
  void Unmap() {
    if (data_ == nullptr) return;
    for (size_t i = 0; i < count_; ++i) data_[i].~T();
    munmap(data_, count_ * sizeof(T) == 0 ? 1 : count_ * sizeof(T));
    data_ = nullptr;
  }

  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_SHARED_MEMORY_H_
