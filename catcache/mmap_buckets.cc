// `mmap`: bucket arrays on fresh anonymous pages, which the kernel zero-fills
// on first touch. The reference point: no memset, and no page that any
// process touched before.
#include <unistd.h>

#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/private_pages.h"
#include "catcache/internal/bucket_allocators.h"

namespace backendlab::catcache::internal {
namespace {

struct Mapping {
  char* base;
  size_t length;
};

absl::StatusOr<Mapping> MapAnonymous(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t length = RoundUp(bytes == 0 ? 1 : bytes, page);
  void* p = MapPrivatePages(length);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("mmap of ", length, " bytes failed: ", std::strerror(errno)));
  }
  return Mapping{static_cast<char*>(p), length};
}

// The initial arrays share one mapping (sized by Reserve), so 56 or 84 caches
// cost one mmap, not one each; an array grown by a rehash gets a mapping of
// its own, unmapped when the next rehash replaces it. Everything is unmapped
// at teardown: nothing is leaked.
class MmapBuckets final : public BucketAllocator {
 public:
  ~MmapBuckets() override {
    for (const Mapping& m : mappings_) UnmapPrivatePages(m.base, m.length);
  }
  BucketStrategy strategy() const override { return BucketStrategy::kMmap; }

  absl::Status Reserve(size_t total_bytes) override {
    BACKENDLAB_CHECK(mappings_.empty());
    absl::StatusOr<Mapping> m = MapAnonymous(total_bytes);
    if (!m.ok()) return m.status();
    mappings_.push_back(*m);
    region_ = *m;
    return absl::OkStatus();
  }

  absl::StatusOr<Bucket*> AllocateZeroed(size_t nbuckets) override {
    const size_t bytes = nbuckets * sizeof(Bucket);
    const size_t start = RoundUp(region_used_, alignof(std::max_align_t));
    char* p;
    if (region_.base != nullptr && start + bytes <= region_.length) {
      const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      const size_t page_end_before = RoundUp(region_used_, page);
      region_used_ = start + bytes;
      stats_.kernel_zeroed_bytes += RoundUp(region_used_, page) - page_end_before;
      p = region_.base + start;
    } else {
      absl::StatusOr<Mapping> m = MapAnonymous(bytes);
      if (!m.ok()) return m.status();
      mappings_.push_back(*m);
      stats_.kernel_zeroed_bytes += m->length;
      p = m->base;
    }
    ++stats_.arrays;
    stats_.live_bytes += bytes;
    return reinterpret_cast<Bucket*>(p);
  }

  void Free(Bucket* buckets, size_t nbuckets) override {
    stats_.live_bytes -= nbuckets * sizeof(Bucket);
    char* p = reinterpret_cast<char*>(buckets);
    // Arrays in the shared initial mapping stay until teardown.
    if (p >= region_.base && p < region_.base + region_.length) return;
    for (size_t i = 0; i < mappings_.size(); ++i) {
      if (mappings_[i].base == p) {
        UnmapPrivatePages(mappings_[i].base, mappings_[i].length);
        mappings_.erase(mappings_.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
  }

 private:
  std::vector<Mapping> mappings_;  // the initial region, if Reserve ran, and grown arrays
  Mapping region_{nullptr, 0};
  size_t region_used_ = 0;
};

}  // namespace

std::unique_ptr<BucketAllocator> MakeMmapBuckets() { return std::make_unique<MmapBuckets>(); }

}  // namespace backendlab::catcache::internal
