// `palloc0` (and `expansible`): bucket arrays from the CacheMemoryContext,
// zeroed with memset, as PostgreSQL's InitCatCache and RehashCatCache do.
#include <cstring>

#include "catcache/internal/bucket_allocators.h"

namespace backendlab::catcache::internal {
namespace {

class Palloc0Buckets final : public BucketAllocator {
 public:
  Palloc0Buckets(BucketStrategy strategy, MemoryContext* context) : strategy_(strategy), context_(context) {}
  BucketStrategy strategy() const override { return strategy_; }
  absl::Status Reserve(size_t) override { return absl::OkStatus(); }

  absl::StatusOr<Bucket*> AllocateZeroed(size_t nbuckets) override {
    return Palloc0Array(*context_, nbuckets, stats_);
  }

  void Free(Bucket* buckets, size_t nbuckets) override {
    stats_.live_bytes -= nbuckets * sizeof(Bucket);
    context_->Free(buckets);
  }

 private:
  BucketStrategy strategy_;
  MemoryContext* context_;
};

}  // namespace

absl::StatusOr<Bucket*> Palloc0Array(MemoryContext& context, size_t nbuckets, BucketAllocatorStats& stats) {
  const size_t bytes = nbuckets * sizeof(Bucket);
  absl::StatusOr<void*> p = context.AllocZero(bytes);
  if (!p.ok()) return p.status();
  ++stats.arrays;
  stats.live_bytes += bytes;
  stats.memset_bytes += bytes;
  return static_cast<Bucket*>(*p);
}

std::unique_ptr<BucketAllocator> MakePalloc0Buckets(BucketStrategy strategy, MemoryContext* context) {
  return std::make_unique<Palloc0Buckets>(strategy, context);
}

}  // namespace backendlab::catcache::internal
