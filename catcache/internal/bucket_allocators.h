// Factories of the bucket allocators, one per file (palloc0_buckets.cc,
// bss_buckets.cc, mmap_buckets.cc). Use MakeBucketAllocator instead.
#ifndef BACKENDLAB_CATCACHE_INTERNAL_BUCKET_ALLOCATORS_H_
#define BACKENDLAB_CATCACHE_INTERNAL_BUCKET_ALLOCATORS_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "catcache/bucket_allocator.h"

namespace backendlab::catcache::internal {

// palloc0 and expansible: the same source of memory; they differ in the
// initial sizes the cache asks for.
std::unique_ptr<BucketAllocator> MakePalloc0Buckets(BucketStrategy strategy, MemoryContext* context);
absl::StatusOr<std::unique_ptr<BucketAllocator>> MakeBssBuckets(MemoryContext* context);
std::unique_ptr<BucketAllocator> MakeMmapBuckets();

// palloc0 of an array of `nbuckets` empty buckets in `context`, counted in
// `stats` (arrays, live bytes, memset bytes): the `palloc0` strategy, and
// `bss`'s fallback when its region is full.
absl::StatusOr<Bucket*> Palloc0Array(MemoryContext& context, size_t nbuckets, BucketAllocatorStats& stats);

inline size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace backendlab::catcache::internal

#endif  // BACKENDLAB_CATCACHE_INTERNAL_BUCKET_ALLOCATORS_H_
