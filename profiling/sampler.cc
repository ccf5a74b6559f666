// The SIGPROF sampler's interface: options checked, errors as absl::Status;
// the handler and the timer are internal/sampler_core's.
#include "profiling/sampler.h"

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "profiling/internal/sampler_core.h"

namespace backendlab::profiling {
namespace {

absl::Status FromCore(const internal::CoreError& error) {
  if (error.ok()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(error.call, ": ", std::strerror(error.err)));
}

}  // namespace

absl::StatusOr<MappedSampleBuffer> MappedSampleBuffer::Create(uint32_t capacity) {
  const size_t bytes = SampleBuffer::BytesFor(capacity);
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("mmap of a ", bytes, "-byte sample buffer: ", std::strerror(errno)));
  }
  return MappedSampleBuffer(memory, bytes, SampleBuffer::Init(memory, capacity));
}

MappedSampleBuffer::MappedSampleBuffer(MappedSampleBuffer&& other) noexcept
    : memory_(std::exchange(other.memory_, nullptr)), bytes_(other.bytes_), buffer_(std::exchange(other.buffer_, nullptr)) {}

MappedSampleBuffer::~MappedSampleBuffer() {
  if (memory_ != nullptr) munmap(memory_, bytes_);
}

absl::Status Sampler::Start(const SamplerOptions& options, SampleBuffer* buffer) {
  if (internal::SamplingStarted()) return absl::FailedPreconditionError("the sampler is already running in this process");
  if (options.frequency_hz < 1 || options.frequency_hz > 100'000) {
    return absl::InvalidArgumentError(absl::StrCat("sampling frequency must be 1..100000 Hz, not ", options.frequency_hz));
  }
  internal::CoreOptions core;
  core.period_ns = 1'000'000'000 / options.frequency_hz;
  core.clock = options.clock == SampleClock::kCpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
  core.frame_pointers = options.unwinder == Unwinder::kFramePointers;
  return FromCore(internal::StartSampling(core, buffer));
}

absl::Status Sampler::RestartAfterFork(SampleBuffer* buffer) {
  if (!internal::SamplingStarted()) return absl::FailedPreconditionError("the sampler was not started");
  return FromCore(internal::RestartSamplingAfterFork(buffer));
}

void Sampler::Stop() { internal::StopSampling(); }

bool Sampler::Running() { return internal::SamplingStarted(); }

void Sampler::SetBuffer(SampleBuffer* buffer) { internal::SetSamplingBuffer(buffer); }

int64_t Sampler::PeriodNs() { return internal::SamplingPeriodNs(); }

void SetSampleTag(int32_t tag) { internal::SetSamplingTag(tag); }
int32_t SampleTag() { return internal::SamplingTag(); }

std::vector<RawSample> CopySamples(const SampleBuffer& buffer) {
  const uint32_t n = buffer.size();
  return std::vector<RawSample>(buffer.samples(), buffer.samples() + n);
}

std::vector<RawSample> CopySharedSamples(const SampleBuffer& buffer, int64_t* torn) {
  const uint32_t reserved = std::min(buffer.reserved.load(std::memory_order_acquire), buffer.capacity);
  std::vector<RawSample> samples;
  samples.reserve(reserved);
  int64_t unfinished = 0;
  for (uint32_t i = 0; i < reserved; ++i) {
    const RawSample& slot = buffer.samples()[i];
    // A const slot read through atomic_ref: the writers are done, the load
    // orders the pcs written before the depth was published.
    const int32_t depth = std::atomic_ref<int32_t>(const_cast<int32_t&>(slot.depth)).load(std::memory_order_acquire);
    if (depth < 1 || depth > kMaxFrames) {
      ++unfinished;
      continue;
    }
    samples.push_back(slot);
  }
  if (torn != nullptr) *torn = unfinished;
  return samples;
}

}  // namespace backendlab::profiling
