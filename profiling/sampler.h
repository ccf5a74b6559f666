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
#include "profiling/sample_buffer.h"

namespace backendlab::profiling {

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
// What runs in signal context, the SIGPROF handler (internal/sampler_core.cc):
// it returns at once if a gate is set and closed (internal::SetSamplingGate,
// used by the sampler library), saves errno, loads the buffer pointer and the
// tag (atomics), reserves a slot with one atomic fetch_add, unwinds into the
// slot and publishes it with release stores (its depth, then `committed`). It
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

// The complete samples of `buffer` (one writer), in order.
std::vector<RawSample> CopySamples(const SampleBuffer& buffer);

// What several processes wrote into one fresh buffer at once (sample_buffer.h),
// read once they are done or stopped: the slots whose depth was published, in
// slot order; `torn` (if set) counts the reserved slots no writer finished (a
// process killed mid-sample).
std::vector<RawSample> CopySharedSamples(const SampleBuffer& buffer, int64_t* torn = nullptr);

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_SAMPLER_H_
