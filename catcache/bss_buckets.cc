// `bss`: bucket arrays peeled from a static zero-initialised region (the
// "char lotsa_zero_bytes[...]" idea from pgsql-hackers), so the kernel, not
// memset, provides the zeros. One region per process, leased by one allocator.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "base/check.h"
#include "catcache/internal/bucket_allocators.h"

namespace backendlab::catcache {
namespace {

// The region sits in .bss: zero-initialised static storage costs no file
// bytes and no memory until a page is touched. Page-aligned so that whole
// pages can be dropped with madvise without touching a neighbour's data.
constexpr size_t kRegionAlign = 4096;
static_assert(kBssRegionBytes % kRegionAlign == 0, "the bss region must be whole pages so it can be dropped");
alignas(kRegionAlign) char g_zero_region[kBssRegionBytes];

// Only one allocator may peel from the region at a time: a second would be
// handed memory the first has already dirtied.
std::atomic<bool> g_region_leased{false};

using internal::RoundUp;

// Makes the first `bytes` of the region zero again without keeping its pages
// resident: dropped pages read back as zero-fill-on-demand, exactly what a
// fresh process has. Falls back to memset if the page size does not divide
// the region's alignment (not the case on x86-64).
void ReleasePages(size_t bytes) {
  if (bytes == 0) return;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t length = RoundUp(bytes, page);
  if (kRegionAlign % page == 0 && length <= kBssRegionBytes &&
      madvise(g_zero_region, length, MADV_DONTNEED) == 0) {
    return;
  }
  std::memset(g_zero_region, 0, bytes);
}

class BssBuckets final : public BucketAllocator {
 public:
  explicit BssBuckets(MemoryContext* context) : context_(context) {}
  ~BssBuckets() override {
    ReleasePages(used_);
    g_region_leased.store(false, std::memory_order_release);
  }
  BucketStrategy strategy() const override { return BucketStrategy::kBss; }
  absl::Status Reserve(size_t) override { return absl::OkStatus(); }

  absl::StatusOr<Bucket*> AllocateZeroed(size_t nbuckets) override {
    const size_t bytes = nbuckets * sizeof(Bucket);
    const size_t start = RoundUp(used_, alignof(std::max_align_t));
    if (start + bytes <= kBssRegionBytes) {
      // Pages the kernel will zero-fill when first touched: those not yet
      // spanned by an earlier array.
      const size_t page_end_before = RoundUp(used_, kRegionAlign);
      used_ = start + bytes;
      stats_.kernel_zeroed_bytes += RoundUp(used_, kRegionAlign) - page_end_before;
      ++stats_.arrays;
      stats_.live_bytes += bytes;
      return reinterpret_cast<Bucket*>(g_zero_region + start);
    }
    // Documented fallback: the region is full, so palloc0 serves the array
    // and the fallback is counted (and reported by `backendlab catcache`).
    absl::StatusOr<Bucket*> p = internal::Palloc0Array(*context_, nbuckets, stats_);
    if (!p.ok()) return p.status();
    ++stats_.fallback_arrays;
    stats_.fallback_bytes += bytes;
    return *p;
  }

  void Free(Bucket* buckets, size_t nbuckets) override {
    stats_.live_bytes -= nbuckets * sizeof(Bucket);
    const auto* p = reinterpret_cast<const char*>(buckets);
    if (p >= g_zero_region && p < g_zero_region + kBssRegionBytes) {
      // A peeled array is not reused: it is dirty now, and zeroing it would be
      // the memset this strategy exists to avoid. The region is made zero
      // again, page by page, when the allocator is released.
      return;
    }
    context_->Free(buckets);
  }

 private:
  MemoryContext* context_;
  size_t used_ = 0;  // bytes of the region peeled so far
};

}  // namespace

namespace internal {

absl::StatusOr<std::unique_ptr<BucketAllocator>> MakeBssBuckets(MemoryContext* context) {
  bool expected = false;
  if (!g_region_leased.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
    return absl::FailedPreconditionError(
        "the bss region is in use by another cache set (one per process, as a backend has one BSS)");
  }
  return std::make_unique<BssBuckets>(context);
}

}  // namespace internal

absl::Status TouchBssRegion() {
  if (g_region_leased.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError("the bss region is in use by a cache set");
  }
  // Writes, not reads: a read would map the shared zero page and a child's
  // write would then be a zero-fill fault, not a copy-on-write one.
  volatile char* region = g_zero_region;
  for (size_t i = 0; i < kBssRegionBytes; i += kRegionAlign) region[i] = 0;
  return absl::OkStatus();
}

absl::Status DropBssRegion() {
  if (g_region_leased.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError("the bss region is in use by a cache set");
  }
  ReleasePages(kBssRegionBytes);
  return absl::OkStatus();
}

}  // namespace backendlab::catcache
