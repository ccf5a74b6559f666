// The layout of the sample file through which the sampler library (in a
// real server's processes) and the tool that started the server meet, and
// the environment that names it. Shared by sampler_library.cc and
// sample_file.cc; free of Abseil for the library's sake. Not for other
// modules: profiling::SampleFile (sample_file.h) is the tool's interface.
#ifndef BACKENDLAB_PROFILING_INTERNAL_SAMPLE_FILE_HEADER_H_
#define BACKENDLAB_PROFILING_INTERNAL_SAMPLE_FILE_HEADER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "profiling/sample_buffer.h"

namespace backendlab::profiling::internal {

// The file the library maps (MAP_SHARED: every process forked from the one
// that maps it writes into the same pages).
inline constexpr char kSampleFileEnv[] = "BACKENDLAB_SAMPLER_FILE";
// The pid of the one process that may start sampling (the server's
// postmaster, named by the tool between its fork and the exec); any other
// process that loads the library stays idle.
inline constexpr char kSampledPidEnv[] = "BACKENDLAB_SAMPLER_PID";
// A test seam: "postmaster" pretends that the sampled process's timer
// cannot be armed, "children" that no forked child's can (timer_create
// refused with EAGAIN, as RLIMIT_SIGPENDING would refuse it).
inline constexpr char kFailTimerEnv[] = "BACKENDLAB_SAMPLER_FAIL_TIMER";

inline constexpr uint32_t kSampleFileMagic = 0x46534c42;  // "BLSF" in the file's first bytes
inline constexpr uint32_t kSampleFileVersion = 1;
// The buffer starts on a page of its own, so that its first samples do not
// share a page with the header the tool writes.
inline constexpr size_t kSampleBufferOffset = 4096;

// At offset 0. Written by the tool before the server starts (magic, version,
// period, capacity), then only through the atomics.
struct SampleFileHeader {
  uint32_t magic;
  uint32_t version;
  int32_t frequency_hz;    // the sampling rate the tool asked for, per second of CPU time
  int32_t reserved;
  int64_t period_ns;       // 1 s / frequency_hz
  uint64_t file_bytes;     // kSampleBufferOffset + SampleBuffer::BytesFor(capacity)
  // The gate (internal::SetSamplingGate): the tool opens it for a recorded
  // pass only; the timers run all along, and a signal that finds it closed
  // returns at once.
  std::atomic<uint32_t> recording;
  // Set by the first process that failed to arm its timer and said so: the
  // log gets that line once, not once per backend.
  std::atomic<uint32_t> said_failure;
  std::atomic<int32_t> sampler_pid;  // the process that started sampling (the postmaster), 0 until it has
  std::atomic<uint32_t> armed;       // processes whose timer was armed: that one and every child forked since
  std::atomic<uint32_t> failed;      // processes whose timer could not be armed
};
static_assert(sizeof(SampleFileHeader) <= kSampleBufferOffset, "the header fits before the buffer");
static_assert(kSampleBufferOffset % alignof(SampleBuffer) == 0, "the buffer is aligned in the file");

}  // namespace backendlab::profiling::internal

#endif  // BACKENDLAB_PROFILING_INTERNAL_SAMPLE_FILE_HEADER_H_
