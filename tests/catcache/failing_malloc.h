// A malloc for the memory context that fails on demand, to check that running
// out of memory is an error value, never a crash.
#ifndef BACKENDLAB_TESTS_CATCACHE_FAILING_MALLOC_H_
#define BACKENDLAB_TESTS_CATCACHE_FAILING_MALLOC_H_

#include <cstddef>
#include <cstdlib>

#include "catcache/memory_context.h"

namespace backendlab::catcache::testing_malloc {

// How many more calls of FailingMalloc succeed; after that it returns null.
inline int g_budget = 0;

inline void* FailingMalloc(size_t size) {
  if (g_budget <= 0) return nullptr;
  --g_budget;
  return std::malloc(size);
}

// A memory context's blocks from FailingMalloc, given back as MallocBlocks' are.
inline BlockSource FailingBlocks() { return {&FailingMalloc, MallocBlocks().release}; }

}  // namespace backendlab::catcache::testing_malloc

#endif  // BACKENDLAB_TESTS_CATCACHE_FAILING_MALLOC_H_
