// Makes this process allocate large blocks the way a newly forked backend does.
#ifndef BACKENDLAB_BASE_FRESH_ALLOCATIONS_H_
#define BACKENDLAB_BASE_FRESH_ALLOCATIONS_H_

#include <malloc.h>

namespace backendlab {

// Every allocation of 4 kB or more becomes a fresh anonymous mapping, freed
// back to the kernel on free(). A backend that callocs its tables right after
// fork gets untouched pages (the zero page until written); a measurement loop
// that allocates and frees in one process would otherwise get them from the
// heap, already faulted in and memset by calloc. Fixing the threshold also
// stops glibc from raising it after the first free. Call once, at the start
// of main(), before anything is allocated that is measured.
inline void UseFreshMappingsForLargeAllocations() { mallopt(M_MMAP_THRESHOLD, 4096); }

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_FRESH_ALLOCATIONS_H_
