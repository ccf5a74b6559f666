// Makes this process allocate large blocks the way a newly forked backend does.
#ifndef BACKENDLAB_BASE_FRESH_ALLOCATIONS_H_
#define BACKENDLAB_BASE_FRESH_ALLOCATIONS_H_

#include <malloc.h>

namespace backendlab {

// Allocations of 4 kB or more that the heap cannot serve from memory it
// already holds (a free chunk that fits, or the top of the heap) become fresh
// anonymous mappings, given back to the kernel on free(). That is what a
// backend that callocs its tables right after fork gets: untouched pages (the
// zero page until written). Without it, glibc raises its threshold after the
// first free of a mapped chunk, and a measurement loop that allocates and
// frees in one process gets its big tables from the heap, faulted in and
// memset by calloc. It does not make every allocation fresh: glibc looks in
// its free lists first, so a block can reuse heap pages a previous allocation
// freed; compare in-process figures within one run. Call once, at the start of
// main(), before anything is allocated that is measured.
inline void UseFreshMappingsForLargeAllocations() { mallopt(M_MMAP_THRESHOLD, 4096); }

// Back to glibc's default threshold (128 kB), for a forked backend: what it
// still mallocs comes from its heap, as a real backend's does, where a 4 kB
// threshold would make every block of 4 kB or more an mmap of its own. (The
// mock's memory context maps its blocks itself, whatever the threshold:
// catcache/README.md. Set explicitly, the threshold no longer adapts; a
// backend lives too briefly for that to matter.)
inline void UseDefaultMallocThresholds() { mallopt(M_MMAP_THRESHOLD, 128 * 1024); }

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_FRESH_ALLOCATIONS_H_
