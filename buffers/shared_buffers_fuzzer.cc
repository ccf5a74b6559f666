// libFuzzer target: ParseSharedBuffers on any bytes. Beyond not crashing, an
// accepted size must be whole 8 kB buffers within the limit and read back the
// same through FormatSize.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "buffers/refcount_table.h"
#include "buffers/shared_buffers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace backendlab::buffers;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<SharedBuffers> parsed = ParseSharedBuffers(text);
  if (!parsed.ok()) {
    // One line, whatever the input holds.
    BACKENDLAB_CHECK(parsed.status().message().find('\n') == std::string_view::npos);
    return 0;
  }
  BACKENDLAB_CHECK(parsed->bytes > 0 && parsed->bytes % kBlockSize == 0);
  BACKENDLAB_CHECK(parsed->nbuffers == parsed->bytes / kBlockSize && parsed->nbuffers <= kMaxNBuffers);
  const absl::StatusOr<SharedBuffers> again = ParseSharedBuffers(FormatSize(parsed->bytes));
  BACKENDLAB_CHECK(again.ok() && again->bytes == parsed->bytes && again->nbuffers == parsed->nbuffers);
  return 0;
}
