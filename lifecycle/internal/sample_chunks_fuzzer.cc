// libFuzzer target: ReadSampleChunks on a file holding any bytes (the sample
// file a fork-mode run reads back, torn or foreign). Whatever it returns, the
// samples it keeps are whole ones whose depth fits their frames.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "base/check.h"
#include "lifecycle/internal/sample_slots.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace backendlab::lifecycle::internal;
  static const int fd = memfd_create("sample_chunks_fuzzer", 0);
  BACKENDLAB_CHECK(fd >= 0);
  BACKENDLAB_CHECK(ftruncate(fd, 0) == 0);
  BACKENDLAB_CHECK(pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
  SampleHarvest harvest;
  const int64_t warmup = size > 0 ? data[0] % 4 : 0;
  (void)ReadSampleChunks(fd, warmup, harvest);
  BACKENDLAB_CHECK(harvest.dropped >= 0 && harvest.truncated >= 0);
  for (const backendlab::profiling::RawSample& s : harvest.samples) {
    BACKENDLAB_CHECK(s.depth >= 0 && s.depth <= backendlab::profiling::kMaxFrames);
  }
  return 0;
}
