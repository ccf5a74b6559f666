// The samples a SIGPROF handler writes, and the lock-free buffer it writes
// them into, which may live in memory shared by several processes. No Abseil
// here: the sampler library (sampler_library.cc), a shared object loaded into
// a real server, is built from this and internal/sampler_core.h alone.
#ifndef BACKENDLAB_PROFILING_SAMPLE_BUFFER_H_
#define BACKENDLAB_PROFILING_SAMPLE_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace backendlab::profiling {

// Deeper stacks are cut at the leaf end's first kMaxFrames frames; the lost
// root end is counted (SampleBuffer::truncated) so a report can say so.
inline constexpr int kMaxFrames = 64;

// One sample as the handler writes it. Fixed size, no pointers to elsewhere,
// so it can be copied out of shared memory and through a file byte for byte.
struct RawSample {
  int32_t pid = 0;     // the sampled process (as of Start/RestartAfterFork)
  int32_t tag = 0;     // SetSampleTag()'s value when the signal arrived
  int32_t overruns = 0;  // timer periods that passed since the last signal without one (informational)
  // Valid entries in pcs; the handler stores it last, with release order, and
  // it is at least 1 in every published sample (the interrupted pc), so that
  // in fresh (zeroed) memory written by several processes at once a slot
  // whose depth reads 0 is one no writer finished.
  int32_t depth = 0;
  // pcs[0] is the interrupted instruction; pcs[i > 0] are return addresses.
  uintptr_t pcs[kMaxFrames] = {};
};

// A fixed-capacity array of samples in caller-provided memory, read by any
// process that maps the same memory. Writes reserve a slot with an atomic
// increment and publish it with release stores, so a reader sees only whole
// samples, and a process that dies in the middle of one loses that one only.
//
// Two ways to use it:
//   - one writer at a time (a backend's buffer in the mock, reused after
//     Reset()): the writer also publishes `committed`, and size()/CopySamples
//     give the samples [0, committed);
//   - many writers at once (every process of a real server, in one file the
//     sampler library maps): `committed` means nothing then; the memory must
//     be fresh (zeroed) and never Reset, and CopySharedSamples reads each
//     slot's depth instead.
struct SampleBuffer {
  std::atomic<uint32_t> reserved;
  std::atomic<uint32_t> committed;  // one writer: samples [0, committed) are complete (while reserved <= capacity)
  std::atomic<uint64_t> dropped;    // samples that found the buffer full
  std::atomic<uint64_t> truncated;  // samples whose stack was deeper than kMaxFrames
  uint32_t capacity;
  // The samples follow the header in the same memory.
  RawSample* samples() { return reinterpret_cast<RawSample*>(this + 1); }
  const RawSample* samples() const { return reinterpret_cast<const RawSample*>(this + 1); }

  static size_t BytesFor(uint32_t capacity);
  // Makes `memory` (BytesFor(capacity) bytes, suitably aligned) an empty buffer.
  static SampleBuffer* Init(void* memory, uint32_t capacity);
  // Empties the buffer for a new writer. Not while a writer may run.
  void Reset();
  // One writer: the complete samples, in order.
  uint32_t size() const;
};
static_assert(sizeof(SampleBuffer) % alignof(RawSample) == 0, "samples follow the header, aligned");
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the handler and processes sharing the buffer rely on lock-free atomics");
static_assert(std::atomic_ref<int32_t>::required_alignment <= alignof(int32_t),
              "RawSample::depth is published through an atomic_ref in place");

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_SAMPLE_BUFFER_H_
