// Small compiler-level helpers for measurement loops.
#ifndef BACKENDLAB_BASE_COMPILER_H_
#define BACKENDLAB_BASE_COMPILER_H_

namespace backendlab {

// Makes the compiler assume all memory may have been read and written here, so
// a timed loop's stores (a pin, then its unpin) cannot be folded away. Emits no
// instruction.
inline void CompilerBarrier() { asm volatile("" ::: "memory"); }

// True when the whole program keeps frame pointers (the `profile` preset), so
// perf's --call-graph=fp and the sampler's fp unwinder see complete stacks.
inline constexpr bool kFramePointers =
#ifdef BACKENDLAB_FRAME_POINTERS
    true;
#else
    false;
#endif

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_COMPILER_H_
