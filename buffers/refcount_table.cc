// Names, validation and error values shared by all refcount layouts.
#include "buffers/refcount_table.h"

#include "absl/strings/str_cat.h"
#include "base/names.h"

namespace backendlab::buffers {

std::string_view LayoutName(Layout layout) { return NameOf(layout, kLayoutNames); }

absl::StatusOr<Layout> ParseLayout(std::string_view name) { return ParseName(name, kLayoutNames, "layout"); }

absl::Status ValidateNBuffers(uint64_t nbuffers) {
  if (nbuffers == 0) return absl::InvalidArgumentError("NBuffers must be at least 1");
  if (nbuffers > kMaxNBuffers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NBuffers ", nbuffers, " is above the limit of ", kMaxNBuffers, " (2^30, 8TB of 8kB buffers)"));
  }
  return absl::OkStatus();
}

namespace internal {

absl::Status OutOfRange(BufferId buffer, uint32_t nbuffers) {
  return absl::OutOfRangeError(
      absl::StrCat("buffer ", buffer, " is out of range (NBuffers is ", nbuffers, ")"));
}

absl::Status NotPinned(BufferId buffer) {
  return absl::FailedPreconditionError(absl::StrCat("unpin of buffer ", buffer, ", which is not pinned"));
}

absl::Status CountOverflow(BufferId buffer) {
  return absl::ResourceExhaustedError(
      absl::StrCat("pin of buffer ", buffer, " would overflow its int32 refcount"));
}

}  // namespace internal
}  // namespace backendlab::buffers
