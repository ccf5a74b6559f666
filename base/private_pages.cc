// Fresh mappings, or a thread's arena of released ones.
#include "base/private_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "base/check.h"

namespace backendlab {
namespace {

thread_local PageArena* t_arena = nullptr;

size_t PageLength(size_t bytes) {
  static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes == 0) bytes = 1;
  return (bytes + page - 1) / page * page;
}

}  // namespace

PageArena::~PageArena() {
  for (const auto& [length, p] : free_) BACKENDLAB_CHECK(munmap(p, length) == 0);
}

void* MapPrivatePages(size_t bytes) {
  const size_t length = PageLength(bytes);
  if (PageArena* arena = t_arena; arena != nullptr) {
    if (auto it = arena->free_.find(length); it != arena->free_.end()) {
      void* p = it->second;
      arena->free_.erase(it);
      arena->kept_bytes_ -= length;
      std::memset(p, 0, length);  // calloc's promise, on pages already faulted in
      return p;
    }
  }
  void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void UnmapPrivatePages(void* p, size_t bytes) {
  if (p == nullptr) return;
  const size_t length = PageLength(bytes);
  if (PageArena* arena = t_arena; arena != nullptr) {
    arena->free_.emplace(length, p);
    arena->kept_bytes_ += length;
    return;
  }
  BACKENDLAB_CHECK(munmap(p, length) == 0);
}

ScopedPageArena::ScopedPageArena(PageArena* arena) : previous_(t_arena) { t_arena = arena; }
ScopedPageArena::~ScopedPageArena() { t_arena = previous_; }

}  // namespace backendlab
