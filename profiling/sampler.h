// A sampling profiler for short-lived forked processes: a per-process POSIX
// timer delivers SIGPROF, and the handler records the interrupted stack, tagged
// with what the process is doing (a backend's phase), into a buffer that may
// live in shared memory, so what a process sampled survives its _exit.
#ifndef BACKENDLAB_PROFILING_SAMPLER_H_
#define BACKENDLAB_PROFILING_SAMPLER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/names.h"

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
  int32_t depth = 0;   // valid entries in pcs
  // pcs[0] is the interrupted instruction; pcs[i > 0] are return addresses.
  uintptr_t pcs[kMaxFrames] = {};
};

// A fixed-capacity array of samples in caller-provided memory, filled by one
// process's handler (one writer: `committed` assumes it) and read by any
// process that maps the same memory. Writes
// reserve a slot with an atomic increment and publish it with a release store
// of `committed`, so a reader sees only whole samples, and a process that dies
// in the middle of one loses that one only.
struct SampleBuffer {
  std::atomic<uint32_t> reserved;
  std::atomic<uint32_t> committed;  // samples [0, committed) are complete (while reserved <= capacity)
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
  // The complete samples, in order.
  uint32_t size() const;
};
static_assert(sizeof(SampleBuffer) % alignof(RawSample) == 0, "samples follow the header, aligned");
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the handler and processes sharing the buffer rely on lock-free atomics");

// A SampleBuffer in a mapping of its own: shared and anonymous, so that a
// forked child's samples written into it are seen by its parent, and
// MAP_NORESERVE, so that only the pages samples touch are backed. Move-only;
// unmapped on destruction.
class MappedSampleBuffer {
 public:
  static absl::StatusOr<MappedSampleBuffer> Create(uint32_t capacity);
  MappedSampleBuffer(MappedSampleBuffer&& other) noexcept;
  MappedSampleBuffer& operator=(MappedSampleBuffer&&) = delete;
  MappedSampleBuffer(const MappedSampleBuffer&) = delete;
  ~MappedSampleBuffer();

  SampleBuffer* get() const { return buffer_; }

 private:
  MappedSampleBuffer(void* memory, size_t bytes, SampleBuffer* buffer)
      : memory_(memory), bytes_(bytes), buffer_(buffer) {}
  void* memory_;
  size_t bytes_;
  SampleBuffer* buffer_;
};

enum class SampleClock {
  kCpu,   // CLOCK_PROCESS_CPUTIME_ID: where the process spends CPU (user and kernel)
  kWall,  // CLOCK_MONOTONIC: where it spends time, blocked time included
};
inline constexpr NamedValue<SampleClock> kSampleClockNames[] = {{SampleClock::kCpu, "cpu"}, {SampleClock::kWall, "wall"}};
inline std::string_view SampleClockName(SampleClock clock) { return NameOf(clock, kSampleClockNames); }
inline absl::StatusOr<SampleClock> ParseSampleClock(std::string_view name) {
  return ParseName(name, kSampleClockNames, "clock");
}

enum class Unwinder {
  kLibunwind,      // unw_backtrace over DWARF CFI: works without frame pointers
  kFramePointers,  // follow saved %rbp: needs the `profile` preset (frame pointers everywhere)
};
inline constexpr NamedValue<Unwinder> kUnwinderNames[] = {{Unwinder::kLibunwind, "libunwind"},
                                                          {Unwinder::kFramePointers, "fp"}};
inline std::string_view UnwinderName(Unwinder unwinder) { return NameOf(unwinder, kUnwinderNames); }
inline absl::StatusOr<Unwinder> ParseUnwinder(std::string_view name) {
  return ParseName(name, kUnwinderNames, "unwinder");
}

struct SamplerOptions {
  int frequency_hz = 1000;
  SampleClock clock = SampleClock::kCpu;
  Unwinder unwinder = Unwinder::kLibunwind;
};

// The profiler of the calling process. One per process; all functions but the
// handler run outside signal context and are not thread-safe with each other.
// The process is expected to have one thread doing the work: the timer signals
// the thread that called Start/RestartAfterFork, and Stop must be called on
// that thread (it is what makes "no handler is running" true when it returns).
//
// What runs in signal context, the SIGPROF handler: it saves errno, loads the
// buffer pointer and the tag (atomics), reserves a slot with one atomic
// fetch_add, unwinds into the slot and publishes it with a release store. It
// is not re-entrant; SIGPROF is blocked while it runs. It allocates nothing
// and takes no lock of its own. What the unwinding calls depends on the
// unwinder:
//   - fp: loads from the interrupted thread's stack, each bounds-checked;
//     nothing else (no call, no lock, no system call).
//   - libunwind: unw_backtrace. For a return address libunwind has not seen
//     in this process it reads the unwind tables: dl_iterate_phdr (glibc's
//     loader lock, recursive) inside a sigprocmask pair (two system calls).
//     So nothing may dlopen/dlclose while libunwind sampling runs, and a
//     process that has just forked pays for its first unwinds (README).
// Each signal also costs the process an rt_sigreturn, which a syscall
// counter running at the same time counts.
class Sampler {
 public:
  // Installs the handler, warms the unwinder (its first call takes a lock and
  // allocates, which a signal handler must not), and arms a timer for the
  // calling thread at options.frequency_hz, writing into `buffer`. Fails on a
  // frequency outside 1..100000 Hz, a second Start, or a refused timer.
  static absl::Status Start(const SamplerOptions& options, SampleBuffer* buffer);

  // In a child just forked from a sampling process: timers are not inherited
  // by fork, so arm a new one for the child, writing into `buffer` (the
  // child's own). The handler and warmed unwinder are inherited.
  static absl::Status RestartAfterFork(SampleBuffer* buffer);

  // On the sampled thread: deletes this process's timer, takes a signal it
  // left pending, and restores the SIGPROF disposition found by Start. Safe
  // to call when not started.
  static void Stop();

  static bool Running();

  // Redirects later samples to another buffer (nullptr: discard them).
  static void SetBuffer(SampleBuffer* buffer);

  // The requested sampling period. CPU-time timers are checked only on the
  // kernel's tick (CONFIG_HZ), so above that rate they fire once per tick of
  // running time (the rest are overruns): still a uniform sample of where CPU
  // goes, at the tick's rate. Wall-clock timers fire at the requested rate.
  static int64_t PeriodNs();
};

// The tag recorded with every later sample of this process. A relaxed atomic
// store: cheap enough to call at every phase boundary.
void SetSampleTag(int32_t tag);
int32_t SampleTag();

// The complete samples of `buffer`, in order.
std::vector<RawSample> CopySamples(const SampleBuffer& buffer);

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_SAMPLER_H_
