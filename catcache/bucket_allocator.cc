// Strategy names and the factory of bucket allocators.
#include "catcache/bucket_allocator.h"

#include <algorithm>

#include "base/names.h"
#include "catcache/internal/bucket_allocators.h"

namespace backendlab::catcache {

std::string_view BucketStrategyName(BucketStrategy strategy) { return NameOf(strategy, kBucketStrategyNames); }

absl::StatusOr<BucketStrategy> ParseBucketStrategy(std::string_view name) {
  return ParseName(name, kBucketStrategyNames, "catcache");
}

uint32_t InitialBuckets(BucketStrategy strategy, uint32_t profile_buckets) {
  if (strategy != BucketStrategy::kExpansible) return profile_buckets;
  return std::max(kExpansibleMinBuckets, profile_buckets / kExpansibleDivisor);
}

absl::StatusOr<std::unique_ptr<BucketAllocator>> MakeBucketAllocator(BucketStrategy strategy,
                                                                     MemoryContext* context) {
  switch (strategy) {
    case BucketStrategy::kPalloc0:
    case BucketStrategy::kExpansible:
      return internal::MakePalloc0Buckets(strategy, context);
    case BucketStrategy::kBss:
      return internal::MakeBssBuckets(context);
    case BucketStrategy::kMmap:
      return internal::MakeMmapBuckets();
  }
  return absl::InvalidArgumentError("unknown bucket strategy");
}

}  // namespace backendlab::catcache
