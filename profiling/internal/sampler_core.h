// The half of the sampler that runs in signal context or arms it: the SIGPROF
// handler, its two unwinders and the per-thread timer. Errors are an errno
// and the name of the call, not absl::Status, and nothing here allocates, so
// that both profiling::Sampler (sampler.h, the interface for everyone else)
// and the sampler library (sampler_library.cc, LD_PRELOADed into a real
// server, linked with nothing but libc and libunwind) are built from this one
// implementation. Not for other modules.
#ifndef BACKENDLAB_PROFILING_INTERNAL_SAMPLER_CORE_H_
#define BACKENDLAB_PROFILING_INTERNAL_SAMPLER_CORE_H_

#include <time.h>

#include <atomic>
#include <cstdint>

#include "profiling/sample_buffer.h"

namespace backendlab::profiling::internal {

// A refused system call: its errno and its name; err == 0 is success.
struct CoreError {
  int err = 0;
  const char* call = "";
  bool ok() const { return err == 0; }
};

struct CoreOptions {
  int64_t period_ns = 1'000'000;
  clockid_t clock = CLOCK_PROCESS_CPUTIME_ID;
  bool frame_pointers = false;  // else libunwind
  // libunwind's per-thread cache of what it read of the unwind tables. Off
  // where nearly every unwind is a process's first (a real server's
  // backends, a sample or two each): the cache is never hit there, and
  // filling it writes pages the process shares with its parent since the
  // fork, a copy-on-write fault each.
  bool cache_unwind_info = true;
};

// Installs the SIGPROF handler (keeping the disposition found, for
// StopSampling), warms libunwind (its first call takes a lock and
// allocates, which the handler must not), and arms a timer for the calling
// thread writing into `buffer`. On an error nothing is left installed.
// Whether sampling had already started is the caller's to check.
CoreError StartSampling(const CoreOptions& options, SampleBuffer* buffer);

// In a child just forked from a sampling process: a timer for the child
// (timers are not inherited by fork), writing into `buffer`; the handler and
// the warmed unwinder are inherited. Calls only timer_create, timer_settime,
// getpid, gettid, clock_gettime (and, for the fp unwinder, the stack's
// bounds): usable from a pthread_atfork child handler.
CoreError RestartSamplingAfterFork(SampleBuffer* buffer);

// Blocks SIGPROF, deletes this process's timer, takes a signal it left
// pending, restores the disposition StartSampling found, unblocks. Safe when
// not started.
void StopSampling();

bool SamplingStarted();
void SetSamplingBuffer(SampleBuffer* buffer);
int64_t SamplingPeriodNs();
void SetSamplingTag(int32_t tag);
int32_t SamplingTag();

// Samples are taken only while *gate is non-zero (read with acquire order in
// the handler); nullptr, the default, samples always. A signal that finds the
// gate closed returns at once: no unwind, no slot. For a gate in memory
// another process writes (the sampler library's file, which the tool opens
// for a recorded pass only).
void SetSamplingGate(const std::atomic<uint32_t>* gate);

// True while the calling thread runs the SIGPROF handler: code that wraps
// the signal-mask calls (the sampler library keeps SIGPROF unblocked) must
// leave the handler's own calls, and libunwind's inside it, alone.
bool InSamplingHandler();

}  // namespace backendlab::profiling::internal

#endif  // BACKENDLAB_PROFILING_INTERNAL_SAMPLER_CORE_H_
