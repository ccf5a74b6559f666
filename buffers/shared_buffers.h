// shared_buffers sizes as users write them ("128MB", "8GB", "1TB") and the
// NBuffers they imply (size / 8 kB, PostgreSQL's BLCKSZ).
#ifndef BACKENDLAB_BUFFERS_SHARED_BUFFERS_H_
#define BACKENDLAB_BUFFERS_SHARED_BUFFERS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace backendlab::buffers {

inline constexpr uint64_t kBlockSize = 8192;  // PostgreSQL's default BLCKSZ

struct SharedBuffers {
  uint64_t bytes;
  uint32_t nbuffers;
};

// Accepts a positive integer and a unit, no space: kB, MB, GB, TB (powers of
// 1024, any case). Rejects 0, negatives, unknown units, spaces, sizes that are
// not a whole number of 8 kB blocks and NBuffers above 2^30, each with a line
// that says what is wrong.
absl::StatusOr<SharedBuffers> ParseSharedBuffers(std::string_view text);

// "128MB", "8GB", "1TB"; falls back to kB for sizes that are not whole MB.
std::string FormatSize(uint64_t bytes);

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_SHARED_BUFFERS_H_
