// Catalog caches under every bucket strategy: zeroed buckets, lookups before
// and after rehashes, consistent counts, the bss region's rules, and memory
// failure as an error value.
#include "catcache/catcache.h"

#include <bit>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "catcache/bucket_allocator.h"
#include "catcache/first_queries.h"
#include "catcache/syscache_profile.h"
#include "gtest/gtest.h"
#include "tests/catcache/failing_malloc.h"

namespace backendlab::catcache {
namespace {

const SyscacheProfile& Pg90() {
  static const SyscacheProfile p = *BuiltinProfile("pg90");
  return p;
}
const SyscacheProfile& Pg17() {
  static const SyscacheProfile p = *BuiltinProfile("pg17");
  return p;
}

std::unique_ptr<CatCacheSet> MustCreate(BucketStrategy s, const SyscacheProfile& p) {
  absl::StatusOr<std::unique_ptr<CatCacheSet>> set = CatCacheSet::Create(s, p);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : nullptr;
}

CatCacheKey Key(uint64_t i) { return {i, i * 7 + 1, i % 3, 0}; }

// Every chain in every bucket hashes to its bucket, and the entries counted
// are the entries chained.
void ExpectChainsSound(const CatCacheSet& set) {
  size_t total = 0;
  for (size_t c = 0; c < set.size(); ++c) {
    const CatCache& cache = set.cache(c);
    ASSERT_TRUE(std::has_single_bit(cache.nbuckets()));
    size_t chained = 0;
    for (uint32_t b = 0; b < cache.nbuckets(); ++b) {
      for (const CatCacheEntry* e = cache.buckets()[b]; e != nullptr; e = e->next) {
        ASSERT_EQ(e->hash & (cache.nbuckets() - 1), b) << cache.name();
        ASSERT_EQ(e->hash, HashCatCacheKey(e->key));
        ++chained;
      }
    }
    EXPECT_EQ(chained, cache.entries()) << cache.name();
    EXPECT_LE(cache.entries(), size_t{2} * cache.nbuckets()) << "the rehash rule holds after every insert";
    total += chained;
  }
  const CatCacheSetStats s = set.Stats();
  EXPECT_EQ(s.entries, total);
  EXPECT_EQ(static_cast<size_t>(s.misses), total) << "every entry was loaded by one miss";
}

class StrategyTest : public testing::TestWithParam<BucketStrategy> {};

TEST_P(StrategyTest, BucketsStartZeroedAtTheStrategysSizes) {
  for (const SyscacheProfile* profile : {&Pg90(), &Pg17()}) {
    std::unique_ptr<CatCacheSet> set = MustCreate(GetParam(), *profile);
    ASSERT_NE(set, nullptr);
    ASSERT_EQ(set->size(), profile->caches.size());
    uint64_t buckets = 0;
    for (size_t c = 0; c < set->size(); ++c) {
      const CatCache& cache = set->cache(c);
      EXPECT_EQ(cache.name(), profile->caches[c].name);
      EXPECT_EQ(cache.nbuckets(), InitialBuckets(GetParam(), profile->caches[c].initial_buckets));
      buckets += cache.nbuckets();
      for (uint32_t b = 0; b < cache.nbuckets(); ++b) ASSERT_EQ(cache.buckets()[b], nullptr) << cache.name() << " " << b;
    }
    const CatCacheSetStats s = set->Stats();
    EXPECT_EQ(s.buckets, buckets);
    EXPECT_EQ(s.bucket_bytes, buckets * sizeof(Bucket));
    EXPECT_EQ(s.entries, 0u);
    EXPECT_EQ(s.rehashes, 0);
    if (GetParam() == BucketStrategy::kExpansible) {
      EXPECT_LT(buckets, profile->TotalBuckets());
    } else {
      EXPECT_EQ(buckets, profile->TotalBuckets());
    }
  }
}

TEST_P(StrategyTest, ZeroingIsAccountedToUsOrTheKernel) {
  std::unique_ptr<CatCacheSet> set = MustCreate(GetParam(), Pg90());
  const CatCacheSetStats s = set->Stats();
  const size_t headers = set->size() * sizeof(CatCache);
  switch (GetParam()) {
    case BucketStrategy::kPalloc0:
    case BucketStrategy::kExpansible:
      EXPECT_EQ(s.memset_bytes, s.bucket_bytes + headers);
      EXPECT_EQ(s.kernel_zeroed_bytes, 0u);
      break;
    case BucketStrategy::kBss:
    case BucketStrategy::kMmap:
      EXPECT_EQ(s.memset_bytes, headers) << "only the cache headers are palloc0'd";
      EXPECT_GE(s.kernel_zeroed_bytes, s.bucket_bytes);
      EXPECT_LT(s.kernel_zeroed_bytes, s.bucket_bytes + 4096 + 16 * set->size());
      break;
  }
}

TEST_P(StrategyTest, LookupsFindEveryEntryBeforeAndAfterRehashes) {
  std::unique_ptr<CatCacheSet> set = MustCreate(GetParam(), Pg17());
  const int reloid = set->FindCache("RELOID");
  ASSERT_GE(reloid, 0);
  const uint32_t initial = set->cache(reloid).nbuckets();
  std::vector<const CatCacheEntry*> loaded;
  for (uint64_t i = 0; i < 5000; ++i) {
    absl::StatusOr<const CatCacheEntry*> e = set->Search(reloid, Key(i));
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_EQ((*e)->key, Key(i));
    loaded.push_back(*e);
    if (i == 2 * initial - 1) {
      EXPECT_EQ(set->cache(reloid).rehashes(), 0) << "no rehash before entries exceed 2 x buckets";
    }
    if (i == 2 * initial) {
      EXPECT_EQ(set->cache(reloid).rehashes(), 1);
    }
  }
  const CatCache& cache = set->cache(reloid);
  EXPECT_EQ(cache.entries(), 5000u);
  // Doubling from `initial` until entries <= 2 x buckets.
  uint32_t expected_buckets = initial;
  int64_t expected_rehashes = 0;
  while (5000 > 2 * expected_buckets) {
    expected_buckets *= 2;
    ++expected_rehashes;
  }
  EXPECT_EQ(cache.nbuckets(), expected_buckets);
  EXPECT_EQ(cache.rehashes(), expected_rehashes);
  for (uint64_t i = 0; i < 5000; ++i) {
    const CatCacheEntry* found = cache.Find(Key(i));
    ASSERT_EQ(found, loaded[i]) << "an entry keeps its address across rehashes";
    absl::StatusOr<const CatCacheEntry*> again = set->Search(reloid, Key(i));
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(*again, loaded[i]);
  }
  EXPECT_EQ(cache.Find(Key(5000)), nullptr);
  EXPECT_EQ(set->hits(), 5000);
  EXPECT_EQ(set->misses(), 5000);
  EXPECT_EQ(set->Stats().rehashes, expected_rehashes);
  ExpectChainsSound(*set);
}

TEST_P(StrategyTest, EntriesCarryTheirTupleBytes) {
  std::unique_ptr<CatCacheSet> set = MustCreate(GetParam(), Pg17());
  absl::StatusOr<const CatCacheEntry*> e = set->Search(0, Key(42));
  ASSERT_TRUE(e.ok());
  EXPECT_GE((*e)->tuple_bytes, 48u);
  EXPECT_LE((*e)->tuple_bytes, 160u);
  EXPECT_EQ((*e)->Tuple()[0], 'p');
  EXPECT_GE(set->Stats().context_requested_bytes, sizeof(CatCacheEntry) + (*e)->tuple_bytes);
}

// Against a reference map: >= 10^5 searches over all caches, each one's
// hit or miss as the reference predicts, the entry found carrying its key.
TEST_P(StrategyTest, RandomisedAgainstAReferenceMap) {
  for (const SyscacheProfile* profile : {&Pg17(), &Pg90()}) {
    std::unique_ptr<CatCacheSet> set = MustCreate(GetParam(), *profile);
    absl::flat_hash_map<std::pair<uint32_t, uint64_t>, const CatCacheEntry*> reference;
    std::mt19937_64 rng(GetParam() == BucketStrategy::kBss ? 11 : 12);
    constexpr int kOps = 100'000;
    for (int i = 0; i < kOps; ++i) {
      const auto cache = static_cast<uint32_t>(rng() % set->size());
      // A small key space for some caches (many hits), a large one for others (growth).
      const uint64_t k = rng() % (cache % 2 == 0 ? 500 : 40000);
      const int64_t misses_before = set->misses();
      absl::StatusOr<const CatCacheEntry*> e = set->Search(cache, Key(k));
      ASSERT_TRUE(e.ok()) << e.status();
      ASSERT_EQ((*e)->key, Key(k));
      auto [it, inserted] = reference.try_emplace({cache, k}, *e);
      ASSERT_EQ(set->misses() - misses_before, inserted ? 1 : 0) << "op " << i;
      if (!inserted) {
        ASSERT_EQ(it->second, *e);
      }
    }
    for (const auto& [key, entry] : reference) {
      ASSERT_EQ(set->cache(key.first).Find(Key(key.second)), entry);
    }
    EXPECT_EQ(set->Stats().entries, reference.size());
    EXPECT_GT(set->Stats().rehashes, 0);
    ExpectChainsSound(*set);
  }
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, StrategyTest, testing::ValuesIn(kAllBucketStrategies),
                         [](const testing::TestParamInfo<BucketStrategy>& param_info) {
                           return std::string(BucketStrategyName(param_info.param));
                         });

TEST(BucketStrategyTest, NamesRoundTripAndUnknownIsAnError) {
  for (BucketStrategy s : kAllBucketStrategies) {
    absl::StatusOr<BucketStrategy> parsed = ParseBucketStrategy(BucketStrategyName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  absl::StatusOr<BucketStrategy> bad = ParseBucketStrategy("calloc");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BucketStrategyName(BucketStrategy::kPalloc0), "palloc0");
  EXPECT_EQ(BucketStrategyName(BucketStrategy::kExpansible), "expansible");
}

TEST(BucketStrategyTest, ExpansibleStartsAtAnEighth) {
  EXPECT_EQ(InitialBuckets(BucketStrategy::kExpansible, 2048), 256u);
  EXPECT_EQ(InitialBuckets(BucketStrategy::kExpansible, 4), kExpansibleMinBuckets);
  EXPECT_EQ(InitialBuckets(BucketStrategy::kPalloc0, 2048), 2048u);
  uint64_t total = 0;
  for (const CacheSpec& c : Pg90().caches) total += InitialBuckets(BucketStrategy::kExpansible, c.initial_buckets);
  EXPECT_EQ(total, 2742u) << "9.0's 21,824 buckets started small: near 17's 2,444";
}

TEST(BssTest, OnlyOneCacheSetHoldsTheRegion) {
  std::unique_ptr<CatCacheSet> first = MustCreate(BucketStrategy::kBss, Pg17());
  absl::StatusOr<std::unique_ptr<CatCacheSet>> second = CatCacheSet::Create(BucketStrategy::kBss, Pg17());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(TouchBssRegion().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(DropBssRegion().code(), absl::StatusCode::kFailedPrecondition);
  first.reset();
  EXPECT_TRUE(TouchBssRegion().ok());
  EXPECT_TRUE(DropBssRegion().ok());
  EXPECT_NE(MustCreate(BucketStrategy::kBss, Pg17()), nullptr) << "released at teardown";
}

TEST(BssTest, RegionIsZeroAgainForTheNextBackend) {
  for (int backend = 0; backend < 3; ++backend) {
    std::unique_ptr<CatCacheSet> set = MustCreate(BucketStrategy::kBss, Pg90());
    for (size_t c = 0; c < set->size(); ++c) {
      const CatCache& cache = set->cache(c);
      for (uint32_t b = 0; b < cache.nbuckets(); ++b) ASSERT_EQ(cache.buckets()[b], nullptr) << backend;
    }
    // Dirty every bucket array of this backend.
    for (size_t c = 0; c < set->size(); ++c) {
      const uint64_t n = 3 * uint64_t{set->cache(c).nbuckets()};  // fixed before the rehashes grow it
      for (uint64_t k = 0; k < n; ++k) ASSERT_TRUE(set->Search(c, Key(k)).ok());
    }
    if (backend == 1) {
      set.reset();
      ASSERT_TRUE(TouchBssRegion().ok()) << "a touched region must read back as zeros too";
    }
  }
}

TEST(BssTest, ExhaustionFallsBackToPalloc0AndIsCounted) {
  std::unique_ptr<CatCacheSet> set = MustCreate(BucketStrategy::kBss, Pg90());
  const int attnum = set->FindCache("ATTNUM");
  ASSERT_GE(attnum, 0);
  EXPECT_EQ(set->Stats().bss_fallback_arrays, 0) << "the 9.0 profile fits the region";
  // 2048 buckets double to 4096, 8192, 16384, 32768 (256 KiB): the region runs out.
  constexpr uint64_t kEntries = 70000;
  for (uint64_t k = 0; k < kEntries; ++k) ASSERT_TRUE(set->Search(attnum, Key(k)).ok());
  const CatCacheSetStats s = set->Stats();
  EXPECT_GT(s.bss_fallback_arrays, 0);
  EXPECT_GT(s.bss_fallback_bytes, 0u);
  EXPECT_GE(s.memset_bytes, s.bss_fallback_bytes) << "fallback arrays are zeroed by memset";
  for (uint64_t k = 0; k < kEntries; ++k) ASSERT_NE(set->cache(attnum).Find(Key(k)), nullptr);
  ExpectChainsSound(*set);
}

TEST(CatCacheFailureTest, OutOfMemoryAtInitOrSearchIsAnErrorValue) {
  for (BucketStrategy strategy : kAllBucketStrategies) {
    testing_malloc::g_budget = 0;
    CatCacheSet::Options options;
    options.blocks = testing_malloc::FailingBlocks();
    absl::StatusOr<std::unique_ptr<CatCacheSet>> none = CatCacheSet::Create(strategy, Pg90(), options);
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);

    testing_malloc::g_budget = 1000;
    absl::StatusOr<std::unique_ptr<CatCacheSet>> set = CatCacheSet::Create(strategy, Pg17(), options);
    ASSERT_TRUE(set.ok()) << set.status();
    testing_malloc::g_budget = 2;
    absl::Status last;
    uint64_t loaded = 0;
    for (uint64_t k = 0; k < 1'000'000 && last.ok(); ++k) {
      absl::StatusOr<const CatCacheEntry*> e = (*set)->Search(0, Key(k));
      last = e.status();
      loaded += e.ok();
    }
    EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << BucketStrategyName(strategy);
    EXPECT_EQ((*set)->cache(0).entries(), loaded) << "a failed search leaves the cache as it was";
    for (uint64_t k = 0; k < loaded; ++k) ASSERT_NE((*set)->cache(0).Find(Key(k)), nullptr);
    ExpectChainsSound(**set);
  }
}

TEST(FirstQueriesTest, DeterministicSkewedAndConsistent) {
  const std::vector<Lookup> a = MakeFirstQueries(Pg17(), 20000);
  const std::vector<Lookup> b = MakeFirstQueries(Pg17(), 20000);
  ASSERT_EQ(a.size(), 20000u);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].cache, b[i].cache);
    ASSERT_EQ(a[i].key, b[i].key);
  }
  std::map<uint32_t, int> per_cache;
  for (const Lookup& l : a) ++per_cache[l.cache];
  std::unique_ptr<CatCacheSet> set = MustCreate(BucketStrategy::kExpansible, Pg17());
  const auto reloid = static_cast<uint32_t>(set->FindCache("RELOID"));
  for (const auto& [cache, n] : per_cache) EXPECT_LE(n, per_cache[reloid]) << "RELOID is the hottest cache";
  EXPECT_GT(per_cache[reloid], 20000 / 10);
  absl::StatusOr<FirstQueriesResult> r = RunFirstQueries(*set, a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->hits + r->misses, 20000);
  EXPECT_GT(r->hits, 0);
  EXPECT_EQ(static_cast<size_t>(r->misses), set->Stats().entries);
  EXPECT_GT(set->Stats().rehashes, 0) << "expansible's small tables grow";
  ExpectChainsSound(*set);
}

}  // namespace
}  // namespace backendlab::catcache
