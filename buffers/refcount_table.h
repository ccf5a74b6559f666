// The backend-private buffer refcount table ("PrivateRefCount"): the concept
// every layout implements, and the names shared by code, CLI, JSON and docs.
#ifndef BACKENDLAB_BUFFERS_REFCOUNT_TABLE_H_
#define BACKENDLAB_BUFFERS_REFCOUNT_TABLE_H_

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/names.h"
#include "buffers/scan_kernels.h"

namespace backendlab::buffers {

// A shared buffer's number, 0 .. nbuffers-1 (PostgreSQL counts from 1 and keeps
// 0 for InvalidBuffer; we keep the range check explicit instead).
using BufferId = uint32_t;

// NBuffers is capped at 2^30 (8 TB of 8 KB pages): PostgreSQL stores buffer
// numbers in a signed int, and a larger table is no longer a plausible backend.
inline constexpr uint32_t kMaxNBuffers = uint32_t{1} << 30;

// One pin still held at a leak check: like PrintBufferLeakWarning's line.
struct Leak {
  BufferId buffer;
  int32_t count;
  friend bool operator==(const Leak&, const Leak&) = default;
};

enum class Layout { kArray, kBytes, kHash, kHashKeys, kArrayTouched };
// "array", "bytes", "hash", "hash-keys", "array-touched": the same words everywhere.
inline constexpr NamedValue<Layout> kLayoutNames[] = {{Layout::kArray, "array"},
                                                      {Layout::kBytes, "bytes"},
                                                      {Layout::kHash, "hash"},
                                                      {Layout::kHashKeys, "hash-keys"},
                                                      {Layout::kArrayTouched, "array-touched"}};
inline constexpr auto kAllLayouts = ValuesOf(kLayoutNames);

std::string_view LayoutName(Layout layout);
absl::StatusOr<Layout> ParseLayout(std::string_view name);

// OK when 1 <= nbuffers <= kMaxNBuffers; otherwise InvalidArgument naming the limit.
absl::Status ValidateNBuffers(uint64_t nbuffers);

// A backend-private refcount table. The hot path (Pin/Unpin) is inline in each
// layout's header and callers are templates over this concept, so a pin costs
// no virtual call. Errors are values: a bad buffer id, an unpin of a buffer not
// pinned, or a count that would pass INT32_MAX give a non-OK status and leave
// the table unchanged.
template <typename T>
concept RefCountTable = std::movable<T> && requires(T table, const T ctable, BufferId buffer,
                                                    ScanKernel kernel, uint32_t nbuffers) {
  { T::kLayout } -> std::convertible_to<Layout>;
  { T::Create(nbuffers) } -> std::same_as<absl::StatusOr<T>>;
  { table.Pin(buffer) } -> std::same_as<absl::Status>;
  { table.Unpin(buffer) } -> std::same_as<absl::Status>;
  { ctable.Count(buffer) } -> std::same_as<absl::StatusOr<int32_t>>;
  // Distinct buffers with a non-zero count. Not a hot-path call: the 9.0-style
  // layouts answer it by scanning.
  { ctable.HeldCount() } -> std::same_as<size_t>;
  // Every buffer still pinned, once, with its count, in ascending buffer order.
  { ctable.FindLeaks(kernel) } -> std::same_as<std::vector<Leak>>;
  { table.ReleaseAll() } -> std::same_as<void>;
  // Bytes this backend holds for the table (what a connection costs in memory).
  { ctable.MemoryBytes() } -> std::same_as<size_t>;
  { ctable.nbuffers() } -> std::same_as<uint32_t>;
};

namespace internal {
absl::Status OutOfRange(BufferId buffer, uint32_t nbuffers);
absl::Status NotPinned(BufferId buffer);
absl::Status CountOverflow(BufferId buffer);
}  // namespace internal

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_REFCOUNT_TABLE_H_
