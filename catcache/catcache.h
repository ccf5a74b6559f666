// A backend's catalog caches: one chained hash table per system cache, in a
// CacheMemoryContext, with bucket arrays from the chosen BucketStrategy.
#ifndef BACKENDLAB_CATCACHE_CATCACHE_H_
#define BACKENDLAB_CATCACHE_CATCACHE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "catcache/bucket_allocator.h"
#include "catcache/memory_context.h"
#include "catcache/syscache_profile.h"

namespace backendlab::catcache {

// Up to four key values, as a PostgreSQL catcache has up to CATCACHE_MAXKEYS
// (4) scan keys. Unused keys are zero. All four are hashed for every cache:
// PostgreSQL hashes only a cache's nkeys, but a constant cost keeps the
// strategies' comparison free of per-cache differences.
inline constexpr int kMaxCacheKeys = 4;
using CatCacheKey = std::array<uint64_t, kMaxCacheKeys>;

uint32_t HashCatCacheKey(const CatCacheKey& key);

// A cached catalog tuple: the chain link, the key and hash, then the tuple's
// bytes (a copy of what a catalog scan found, as CatalogCacheCreateEntry keeps).
struct CatCacheEntry {
  CatCacheEntry* next;
  uint32_t hash;
  uint32_t tuple_bytes;
  CatCacheKey key;
  const unsigned char* Tuple() const { return reinterpret_cast<const unsigned char*>(this + 1); }
};

// One system cache. Lives in the CacheMemoryContext (allocated with palloc0,
// as InitCatCache does); owned by its CatCacheSet.
class CatCache {
 public:
  std::string_view name() const { return name_; }
  uint32_t nbuckets() const { return nbuckets_; }
  uint32_t initial_buckets() const { return initial_buckets_; }
  size_t entries() const { return entries_; }
  int64_t rehashes() const { return rehashes_; }
  // The entry with this key, or nullptr: a lookup that never loads.
  const CatCacheEntry* Find(const CatCacheKey& key) const;
  // The bucket array, for tests that check it starts zeroed and chains are sound.
  const Bucket* buckets() const { return buckets_; }

 private:
  friend class CatCacheSet;
  // NAMEDATALEN: the cache header is a plain struct in the context.
  char name_[64];
  uint32_t nbuckets_;
  uint32_t initial_buckets_;
  size_t entries_;
  int64_t rehashes_;
  Bucket* buckets_;
};

struct CatCacheSetStats {
  int64_t caches = 0;
  size_t entries = 0;
  uint64_t buckets = 0;                 // current, all caches
  size_t bucket_bytes = 0;              // bytes of the current bucket arrays
  int64_t rehashes = 0;
  int64_t rehash_ns = 0;                // wall time spent in rehashes (steady_clock)
  int64_t hits = 0;
  int64_t misses = 0;                   // = entries loaded by Search
  size_t context_held_bytes = 0;        // what the CacheMemoryContext took from malloc
  size_t context_requested_bytes = 0;
  size_t memset_bytes = 0;              // zeroed by us: every palloc0, bucket arrays included
  size_t kernel_zeroed_bytes = 0;       // bucket pages the kernel zero-fills on first touch
  int64_t bss_fallback_arrays = 0;      // bss arrays served by palloc0: the region was full
  size_t bss_fallback_bytes = 0;
};

// The caches of one backend (PostgreSQL's SysCache[] array).
//
// Rehash rule, the same for every strategy (RehashCatCache, PostgreSQL >= 9.4):
// when a cache holds more than 2 x nbuckets entries, its bucket array doubles
// and every entry moves to its new chain. PostgreSQL 9.0's tables never
// grew; here the pg90 profile's large tables simply rarely reach the rule.
// The strategy decides where the zeroed arrays come from and, for
// `expansible`, that the tables start small (InitialBuckets()).
class CatCacheSet {
 public:
  struct Options {
    BlockSource blocks = FreshMappedBlocks();  // the context's blocks; tests inject failures
  };

  // InitCatCache for every cache of `profile`: the backend-start phase.
  static absl::StatusOr<std::unique_ptr<CatCacheSet>> Create(BucketStrategy strategy,
                                                             const SyscacheProfile& profile);
  static absl::StatusOr<std::unique_ptr<CatCacheSet>> Create(BucketStrategy strategy,
                                                             const SyscacheProfile& profile, Options options);
  CatCacheSet(const CatCacheSet&) = delete;
  CatCacheSet& operator=(const CatCacheSet&) = delete;
  // Backend exit: bucket arrays go back to their allocator (bss pages are
  // dropped, mmap regions unmapped), then the context is deleted.
  ~CatCacheSet();

  BucketStrategy strategy() const { return allocator_->strategy(); }
  size_t size() const { return caches_.size(); }
  const CatCache& cache(size_t index) const { return *caches_[index]; }
  // The index of the cache with this name, or -1.
  int FindCache(std::string_view name) const;

  // SearchCatCache: a hit returns the cached entry; a miss simulates the
  // catalog read (CatalogCacheCreateEntry: an entry with a copy of the tuple,
  // 48..160 bytes depending on the key, palloc'd in the context), inserts
  // it, and rehashes first if the rule says so. Errors only when memory runs out.
  absl::StatusOr<const CatCacheEntry*> Search(size_t cache, const CatCacheKey& key);

  // Walks the context: O(chunks). Not for timed loops; hits() and misses() are cheap.
  CatCacheSetStats Stats() const;
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  MemoryContextStats ContextStats() const { return context_.Stats(); }

 private:
  CatCacheSet(MemoryContext context) : context_(std::move(context)) {}
  absl::Status Rehash(CatCache& cache);

  MemoryContext context_;
  std::unique_ptr<BucketAllocator> allocator_;
  std::vector<CatCache*> caches_;  // in the context
  int64_t hits_ = 0;
  int64_t misses_ = 0;
  int64_t rehash_ns_ = 0;
};

}  // namespace backendlab::catcache

#endif  // BACKENDLAB_CATCACHE_CATCACHE_H_
