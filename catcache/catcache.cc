// Catalog cache hash tables: InitCatCache, SearchCatCache with load on miss,
// RehashCatCache.
#include "catcache/catcache.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <new>
#include <type_traits>

#include "absl/status/status.h"
#include "base/check.h"

namespace backendlab::catcache {
namespace {

static_assert(std::is_trivially_destructible_v<CatCache>,
              "a CatCache lives in the memory context and is released with it, never destroyed");
static_assert(sizeof(CatCacheEntry) % kMaxAlign == 0,
              "the tuple bytes follow the entry header and should start aligned");

// splitmix64's finaliser: every input bit reaches every output bit.
uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Stands in for the catalog page a tuple is copied from.
constexpr unsigned char kCatalogPage[160] = {
    'p', 'g', '_', 'c', 'l', 'a', 's', 's', 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

uint32_t SimulatedTupleBytes(uint32_t hash) { return 48 + (hash % 8) * 16; }

size_t BucketIndex(uint32_t hash, uint32_t nbuckets) { return hash & (nbuckets - 1); }

}  // namespace

uint32_t HashCatCacheKey(const CatCacheKey& key) {
  uint64_t h = 0;
  for (uint64_t k : key) h = std::rotl(h, 17) ^ Mix64(k + 0x9e3779b97f4a7c15ULL);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

const CatCacheEntry* CatCache::Find(const CatCacheKey& key) const {
  const uint32_t hash = HashCatCacheKey(key);
  for (const CatCacheEntry* e = buckets_[BucketIndex(hash, nbuckets_)]; e != nullptr; e = e->next) {
    if (e->hash == hash && e->key == key) return e;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<CatCacheSet>> CatCacheSet::Create(BucketStrategy strategy,
                                                                 const SyscacheProfile& profile) {
  return Create(strategy, profile, Options{});
}

absl::StatusOr<std::unique_ptr<CatCacheSet>> CatCacheSet::Create(BucketStrategy strategy,
                                                                 const SyscacheProfile& profile, Options options) {
  absl::StatusOr<MemoryContext> context = MemoryContext::Create(options.blocks);
  if (!context.ok()) return context.status();
  std::unique_ptr<CatCacheSet> set(new CatCacheSet(*std::move(context)));
  absl::StatusOr<std::unique_ptr<BucketAllocator>> allocator = MakeBucketAllocator(strategy, &set->context_);
  if (!allocator.ok()) return allocator.status();
  set->allocator_ = *std::move(allocator);

  size_t total_bytes = 0;
  for (const CacheSpec& spec : profile.caches) {
    BACKENDLAB_CHECK(std::has_single_bit(spec.initial_buckets));
    total_bytes += InitialBuckets(strategy, spec.initial_buckets) * sizeof(Bucket);
  }
  if (absl::Status s = set->allocator_->Reserve(total_bytes); !s.ok()) return s;
  set->caches_.reserve(profile.caches.size());
  for (const CacheSpec& spec : profile.caches) {
    absl::StatusOr<void*> memory = set->context_.AllocZero(sizeof(CatCache));
    if (!memory.ok()) return memory.status();
    CatCache* cache = new (*memory) CatCache;
    set->caches_.push_back(cache);
    const size_t name_length = std::min(spec.name.size(), sizeof(cache->name_) - 1);
    std::memcpy(cache->name_, spec.name.data(), name_length);
    cache->name_[name_length] = '\0';
    cache->nbuckets_ = cache->initial_buckets_ = InitialBuckets(strategy, spec.initial_buckets);
    cache->entries_ = 0;
    cache->rehashes_ = 0;
    cache->buckets_ = nullptr;
    absl::StatusOr<Bucket*> buckets = set->allocator_->AllocateZeroed(cache->nbuckets_);
    if (!buckets.ok()) return buckets.status();
    cache->buckets_ = *buckets;
  }
  return set;
}

CatCacheSet::~CatCacheSet() {
  for (CatCache* cache : caches_) {
    if (cache->buckets_ != nullptr) allocator_->Free(cache->buckets_, cache->nbuckets_);
  }
  allocator_.reset();
  context_.Delete();
}

int CatCacheSet::FindCache(std::string_view name) const {
  for (size_t i = 0; i < caches_.size(); ++i) {
    if (caches_[i]->name() == name) return static_cast<int>(i);
  }
  return -1;
}

absl::Status CatCacheSet::Rehash(CatCache& cache) {
  // Timed here because only here is it separable from the lookups around it;
  // two clock reads are small beside even the smallest rehash.
  const auto start = std::chrono::steady_clock::now();
  const uint32_t new_nbuckets = cache.nbuckets_ * 2;
  absl::StatusOr<Bucket*> new_buckets = allocator_->AllocateZeroed(new_nbuckets);
  if (!new_buckets.ok()) return new_buckets.status();
  for (uint32_t i = 0; i < cache.nbuckets_; ++i) {
    for (CatCacheEntry* e = cache.buckets_[i]; e != nullptr;) {
      CatCacheEntry* next = e->next;
      Bucket& head = (*new_buckets)[BucketIndex(e->hash, new_nbuckets)];
      e->next = head;
      head = e;
      e = next;
    }
  }
  allocator_->Free(cache.buckets_, cache.nbuckets_);
  cache.buckets_ = *new_buckets;
  cache.nbuckets_ = new_nbuckets;
  ++cache.rehashes_;
  rehash_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  return absl::OkStatus();
}

absl::StatusOr<const CatCacheEntry*> CatCacheSet::Search(size_t index, const CatCacheKey& key) {
  BACKENDLAB_CHECK(index < caches_.size());
  CatCache& cache = *caches_[index];
  const uint32_t hash = HashCatCacheKey(key);
  Bucket* bucket = &cache.buckets_[BucketIndex(hash, cache.nbuckets_)];
  for (CatCacheEntry* e = *bucket; e != nullptr; e = e->next) {
    if (e->hash == hash && e->key == key) {
      ++hits_;
      return e;
    }
  }
  // Miss: the rule of RehashCatCache, checked before the insert so that a
  // failed rehash leaves the cache as it was.
  if (cache.entries_ + 1 > size_t{2} * cache.nbuckets_) {
    if (absl::Status s = Rehash(cache); !s.ok()) return s;
    bucket = &cache.buckets_[BucketIndex(hash, cache.nbuckets_)];
  }
  const uint32_t tuple_bytes = SimulatedTupleBytes(hash);
  absl::StatusOr<void*> memory = context_.Alloc(sizeof(CatCacheEntry) + tuple_bytes);
  if (!memory.ok()) return memory.status();
  auto* entry = static_cast<CatCacheEntry*>(*memory);
  entry->hash = hash;
  entry->tuple_bytes = tuple_bytes;
  entry->key = key;
  std::memcpy(entry + 1, kCatalogPage, tuple_bytes);
  entry->next = *bucket;
  *bucket = entry;
  ++cache.entries_;
  ++misses_;
  return entry;
}

CatCacheSetStats CatCacheSet::Stats() const {
  CatCacheSetStats s;
  s.caches = static_cast<int64_t>(caches_.size());
  for (const CatCache* cache : caches_) {
    s.entries += cache->entries_;
    s.buckets += cache->nbuckets_;
    s.rehashes += cache->rehashes_;
  }
  s.bucket_bytes = s.buckets * sizeof(Bucket);
  s.rehash_ns = rehash_ns_;
  s.hits = hits_;
  s.misses = misses_;
  const MemoryContextStats context = context_.Stats();
  s.context_held_bytes = context.held_bytes;
  s.context_requested_bytes = context.requested_bytes;
  s.memset_bytes = context.zeroed_bytes;
  const BucketAllocatorStats& buckets = allocator_->stats();
  s.kernel_zeroed_bytes = buckets.kernel_zeroed_bytes;
  s.bss_fallback_arrays = buckets.fallback_arrays;
  s.bss_fallback_bytes = buckets.fallback_bytes;
  BACKENDLAB_CHECK(buckets.live_bytes == s.bucket_bytes);
  return s;
}

}  // namespace backendlab::catcache
