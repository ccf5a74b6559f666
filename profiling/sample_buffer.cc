// The sample buffer's set-up and size, shared by Sampler and the sampler
// library.
#include "profiling/sample_buffer.h"

#include <algorithm>
#include <new>

namespace backendlab::profiling {

size_t SampleBuffer::BytesFor(uint32_t capacity) {
  return sizeof(SampleBuffer) + size_t{capacity} * sizeof(RawSample);
}

SampleBuffer* SampleBuffer::Init(void* memory, uint32_t capacity) {
  auto* buffer = new (memory) SampleBuffer;
  buffer->capacity = capacity;
  buffer->Reset();
  return buffer;
}

void SampleBuffer::Reset() {
  reserved.store(0, std::memory_order_relaxed);
  committed.store(0, std::memory_order_relaxed);
  dropped.store(0, std::memory_order_relaxed);
  truncated.store(0, std::memory_order_relaxed);
}

uint32_t SampleBuffer::size() const { return std::min(committed.load(std::memory_order_acquire), capacity); }

}  // namespace backendlab::profiling
