// Drawing a start's layout and applying it.
#include "base/start_layout.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

namespace backendlab {

StartLayout DrawStartLayout(uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Modulo of a 64-bit draw: its bias over ranges this small is below 1e-15.
  auto uniform = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1)); };
  StartLayout layout;
  layout.stack_bytes = 16 * uniform(kMaxStackBytes / 16);
  layout.heap_bytes = 16 * uniform(kMaxHeapBytes / 16);
  layout.mmap_bytes = uniform(kMaxMmapPages) * sysconf(_SC_PAGESIZE);
  layout.name_chars = static_cast<int>(uniform(kMaxNameChars));
  layout.env_bytes = uniform(kMaxEnvBytes);
  return layout;
}

void ApplyStartLayout(const StartLayout& layout) {
  if (layout.heap_bytes > 0) {
    // Kept, and touched so that it is not an untouched mapping of its own:
    // below glibc's mmap threshold it moves the heap's break. Reachable from
    // here for the process's life, so no leak check calls it lost.
    static char* kept = nullptr;
    kept = static_cast<char*>(std::malloc(static_cast<size_t>(layout.heap_bytes)));
    if (kept != nullptr) *static_cast<volatile char*>(kept) = 0;
  }
  if (layout.mmap_bytes > 0) {
    // Mappings are placed top-down, each in the highest gap it fits: this
    // one moves every later one too large for a hole above it (the shared
    // buffers, the backends' large tables), and costs no memory.
    (void)mmap(nullptr, static_cast<size_t>(layout.mmap_bytes), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
               -1, 0);
  }
}

}  // namespace backendlab
