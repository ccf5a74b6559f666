// Small compiler-level helpers for measurement loops.
#ifndef BACKENDLAB_BASE_COMPILER_H_
#define BACKENDLAB_BASE_COMPILER_H_

namespace backendlab {

// Makes the compiler assume all memory may have been read and written here, so
// a timed loop's stores (a pin, then its unpin) cannot be folded away. Emits no
// instruction.
inline void CompilerBarrier() { asm volatile("" ::: "memory"); }

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_COMPILER_H_
