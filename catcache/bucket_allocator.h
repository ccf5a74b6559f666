// Where a catalog cache's zeroed bucket arrays come from: the strategies
// palloc0, bss, expansible and mmap, chosen by name once per backend.
#ifndef BACKENDLAB_CATCACHE_BUCKET_ALLOCATOR_H_
#define BACKENDLAB_CATCACHE_BUCKET_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/names.h"
#include "catcache/memory_context.h"

namespace backendlab::catcache {

enum class BucketStrategy {
  kPalloc0,     // CacheMemoryContext + memset, at the profile's sizes (PostgreSQL's InitCatCache)
  kBss,         // peeled from a static zero region, at the profile's sizes
  kExpansible,  // CacheMemoryContext + memset, starting at 1/kExpansibleDivisor of the profile's sizes
  kMmap,        // fresh anonymous pages, at the profile's sizes
};
// The names of flags and JSON (`--catcaches=palloc0,bss`, "catcache": "bss").
inline constexpr NamedValue<BucketStrategy> kBucketStrategyNames[] = {{BucketStrategy::kPalloc0, "palloc0"},
                                                                      {BucketStrategy::kBss, "bss"},
                                                                      {BucketStrategy::kExpansible, "expansible"},
                                                                      {BucketStrategy::kMmap, "mmap"}};
inline constexpr auto kAllBucketStrategies = ValuesOf(kBucketStrategyNames);

std::string_view BucketStrategyName(BucketStrategy strategy);
// InvalidArgument naming the known ones for anything else ("unknown catcache ...").
absl::StatusOr<BucketStrategy> ParseBucketStrategy(std::string_view name);

// `expansible` starts every cache at its profile size divided by this (at
// least kExpansibleMinBuckets): the 9.0 total of 21,824 buckets becomes 2,742,
// about the 2,444 that PostgreSQL >= 9.4 chose (commit 20cb18db shrank ATTNUM
// 2048 -> 128 and RELOID 1024 -> 128).
inline constexpr uint32_t kExpansibleDivisor = 8;
inline constexpr uint32_t kExpansibleMinBuckets = 2;

// The initial bucket count of a cache under `strategy`.
uint32_t InitialBuckets(BucketStrategy strategy, uint32_t profile_buckets);

// Size of the static zero region of `bss`: the 9.0 profile's 21,824 buckets x
// 8 bytes = 174,592 bytes, plus headroom for some rehash growth. 256 KiB, in
// the binary's .bss, so it costs no file size and no memory until touched.
inline constexpr size_t kBssRegionBytes = 256 * 1024;

struct CatCacheEntry;
using Bucket = CatCacheEntry*;  // the head of a hash chain; nullptr = empty

struct BucketAllocatorStats {
  int64_t arrays = 0;               // bucket arrays handed out so far
  size_t live_bytes = 0;            // bytes of the arrays handed out and not freed
  size_t memset_bytes = 0;          // zeroed by us, with memset
  size_t kernel_zeroed_bytes = 0;   // pages the kernel zero-fills on first touch (bss, mmap)
  int64_t fallback_arrays = 0;      // bss: arrays served by palloc0 because the region was full
  size_t fallback_bytes = 0;
};

// Not on the hot path: called when a cache is initialised or rehashed, never
// per lookup, so a virtual call is fine here.
class BucketAllocator {
 public:
  virtual ~BucketAllocator() = default;
  virtual BucketStrategy strategy() const = 0;
  // Called once, before the initial arrays, with their total size.
  virtual absl::Status Reserve(size_t total_bytes) = 0;
  // An array of `nbuckets` empty buckets.
  virtual absl::StatusOr<Bucket*> AllocateZeroed(size_t nbuckets) = 0;
  // Gives back an array from AllocateZeroed (after a rehash, or at teardown).
  virtual void Free(Bucket* buckets, size_t nbuckets) = 0;
  const BucketAllocatorStats& stats() const { return stats_; }

 protected:
  BucketAllocatorStats stats_;
};

// `context` must outlive the allocator. `bss` fails with FailedPrecondition
// while another allocator holds the region (one per process, as a backend has
// one BSS); `mmap` fails with ResourceExhausted when mmap does.
absl::StatusOr<std::unique_ptr<BucketAllocator>> MakeBucketAllocator(BucketStrategy strategy,
                                                                     MemoryContext* context);

// --- The bss region, for the fork experiment ------------------------------
// Both fail with FailedPrecondition while a `bss` allocator holds the region.
//
// Writes zeros over every page of the region: it is now resident and private
// to this process, so a forked child's first write to a page is a
// copy-on-write fault (a page copy).
absl::Status TouchBssRegion();
// Drops the region's pages (madvise MADV_DONTNEED): the next touch of a page,
// here or in a child forked later, is a zero-fill fault, as in a process
// whose BSS was never touched. Released `bss` allocators do this themselves.
absl::Status DropBssRegion();

}  // namespace backendlab::catcache

#endif  // BACKENDLAB_CATCACHE_BUCKET_ALLOCATOR_H_
