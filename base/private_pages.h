// Private anonymous memory for a backend's own structures (its refcount
// table, its memory contexts' blocks, its weight's pages), from one place,
// so that a process model decides where that memory comes from:
//
// - fresh (the default, and always in a forked backend): a new mapping per
//   request, the kernel's zero page until touched, unmapped when released —
//   what a newly started backend's calloc of a large block gets;
// - an arena installed on the calling thread (a backend thread of
//   `cycle --mode=thread --thread-memory=reuse`): a mapping of the same
//   length that an earlier backend on the same arena released is handed out
//   again, zeroed with memset (its pages are already faulted in), as a
//   threaded server's reused arena serves a calloc; a released mapping goes
//   back to the arena, not to the kernel.
#ifndef BACKENDLAB_BASE_PRIVATE_PAGES_H_
#define BACKENDLAB_BASE_PRIVATE_PAGES_H_

#include <cstddef>
#include <map>

namespace backendlab {

// Mappings kept for reuse, by length. Not thread-safe: one thread uses an
// arena at a time (a backend slot's). Unmaps what it keeps when it goes.
class PageArena {
 public:
  PageArena() = default;
  PageArena(const PageArena&) = delete;
  PageArena& operator=(const PageArena&) = delete;
  ~PageArena();

  // Mappings held for reuse, and their bytes.
  size_t kept() const { return free_.size(); }
  size_t kept_bytes() const { return kept_bytes_; }

 private:
  friend void* MapPrivatePages(size_t bytes);
  friend void UnmapPrivatePages(void* p, size_t bytes);
  std::multimap<size_t, void*> free_;
  size_t kept_bytes_ = 0;
};

// `bytes` of zeroed private memory, page-aligned: from the calling thread's
// arena if it holds a mapping of that length (rounded up to pages), fresh
// otherwise. nullptr with errno set if the kernel refuses.
void* MapPrivatePages(size_t bytes);
// Gives back what MapPrivatePages returned for the same `bytes`: to the
// calling thread's arena if it has one, to the kernel otherwise.
void UnmapPrivatePages(void* p, size_t bytes);

// Installs `arena` on the calling thread for this object's life (nullptr:
// fresh mappings), putting back what was installed before.
class ScopedPageArena {
 public:
  explicit ScopedPageArena(PageArena* arena);
  ScopedPageArena(const ScopedPageArena&) = delete;
  ScopedPageArena& operator=(const ScopedPageArena&) = delete;
  ~ScopedPageArena();

 private:
  PageArena* previous_;
};

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_PRIVATE_PAGES_H_
