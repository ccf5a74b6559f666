// Where a fork-mode run's profiler samples live: buffers in memory the
// postmaster shares with its backends, one per backend slot and one for the
// postmaster, and the file the postmaster appends them to. Not for other
// modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_SAMPLE_SLOTS_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_SAMPLE_SLOTS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle::internal {

// A backend's buffer is written by its SIGPROF handler and read by the
// postmaster once the backend is reaped, so samples survive _exit and
// SIGKILL. A slot's buffer is reset before the slot's next backend forks.
class SampleSlots {
 public:
  // Samples per buffer: a backend sampled at 1 kHz fills its buffer after a
  // second of CPU; the postmaster after a minute. Beyond, samples are counted
  // as dropped, not lost silently.
  static constexpr uint32_t kBackendCapacity = 1024;
  static constexpr uint32_t kPostmasterCapacity = 65536;

  static absl::StatusOr<SampleSlots> Create(size_t backend_slots);
  SampleSlots(SampleSlots&& other) noexcept;
  SampleSlots& operator=(SampleSlots&&) = delete;
  SampleSlots(const SampleSlots&) = delete;
  ~SampleSlots();

  profiling::SampleBuffer* Backend(size_t slot) { return backends_[slot]; }
  profiling::SampleBuffer* Postmaster() { return postmaster_; }

 private:
  SampleSlots() = default;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  std::vector<profiling::SampleBuffer*> backends_;
  profiling::SampleBuffer* postmaster_ = nullptr;
};

// Appends `buffer`'s samples to `fd` as one chunk, tagged with the backend's
// sequence number (-1: the postmaster). False if the write fails; the file is
// then cut back to where the chunk began, so it holds whole chunks only.
bool AppendSampleChunk(int fd, int64_t sequence, const profiling::SampleBuffer& buffer);

struct SampleHarvest {
  std::vector<profiling::RawSample> samples;
  int64_t dropped = 0;    // samples that found a buffer full
  int64_t truncated = 0;  // samples whose stacks were cut at kMaxFrames
};

// Reads the chunks of `fd` from its start, leaving out backends with a
// sequence number below `warmup` (as every other figure does). A torn or
// inconsistent chunk is DataLoss; `out` keeps the chunks read before it.
absl::Status ReadSampleChunks(int fd, int64_t warmup, SampleHarvest& out);

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_SAMPLE_SLOTS_H_
