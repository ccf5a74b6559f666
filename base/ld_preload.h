// LD_PRELOAD as ld.so reads it: a list split at every ':' and ' ', with no
// way to quote either (glibc's elf/rtld.c, handle_preload_list). For a
// preloaded library's constructor: header-only, libc alone, so that the
// built-in sampler and the what-if shims, loaded into a server the tool did
// not build, can use it.
#ifndef BACKENDLAB_BASE_LD_PRELOAD_H_
#define BACKENDLAB_BASE_LD_PRELOAD_H_

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

namespace backendlab {

// What ld.so splits LD_PRELOAD at.
inline constexpr char kLdPreloadSeparators[] = ": ";

// Removes the library that holds `address` (one of its own functions) from
// this process's LD_PRELOAD, every entry naming it as ld.so loaded it, the
// others kept in order; the variable goes when none is left. A program this
// process executes (a server's archive_command, COPY ... PROGRAM) then does
// not load the library, which was meant for this process and its forks.
// Not async-signal-safe (setenv): for a constructor.
inline void RemoveOwnLibraryFromLdPreload(const void* address) {
  Dl_info self{};
  if (dladdr(address, &self) == 0 || self.dli_fname == nullptr) return;
  const char* list = getenv("LD_PRELOAD");
  if (list == nullptr) return;
  char kept[4096];
  size_t size = 0;
  const size_t own = strlen(self.dli_fname);
  for (const char* p = list; *p != '\0';) {
    const size_t n = strcspn(p, kLdPreloadSeparators);
    if (n > 0 && !(n == own && strncmp(p, self.dli_fname, n) == 0) && size + n + 1 < sizeof kept) {
      if (size > 0) kept[size++] = ':';
      memcpy(kept + size, p, n);
      size += n;
    }
    p += n;
    if (*p != '\0') ++p;
  }
  kept[size] = '\0';
  if (size == 0) {
    unsetenv("LD_PRELOAD");
  } else {
    setenv("LD_PRELOAD", kept, 1);
  }
}

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_LD_PRELOAD_H_
