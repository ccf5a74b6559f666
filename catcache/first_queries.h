// The "first queries" of a new backend: lookups over a skewed distribution of
// caches and keys, the phase where small-then-expanding tables pay back.
#ifndef BACKENDLAB_CATCACHE_FIRST_QUERIES_H_
#define BACKENDLAB_CATCACHE_FIRST_QUERIES_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "catcache/catcache.h"
#include "catcache/syscache_profile.h"

namespace backendlab::catcache {

// Caches a session touches most, hottest first; the profile's other caches
// follow in file order. Names a profile lacks are skipped.
inline constexpr std::string_view kHotCaches[] = {
    "RELOID", "ATTNUM", "TYPEOID", "PROCOID", "RELNAMENSP", "INDEXRELID", "AMOPSTRATEGY", "OPEROID",
    "NAMESPACEOID", "STATRELATTINH", "AUTHOID", "CASTSOURCETARGET", "OPERNAMENSP", "AMPROCNUM", "CLAOID"};

// Shape of the skew: the cache of rank r (1-based) is chosen with probability
// proportional to 1 / r^kCacheZipf, and within it the key of rank k among
// kKeysPerCache with probability proportional to 1 / k^kKeyZipf: the first
// lookups are mostly misses (the caches start empty), later ones mostly hits,
// and the hot caches keep meeting new keys, so their tables grow.
inline constexpr double kCacheZipf = 1.0;
inline constexpr double kKeyZipf = 1.0;
inline constexpr uint32_t kKeysPerCache = 1 << 12;
inline constexpr uint64_t kDefaultSeed = 20101201;

struct Lookup {
  uint32_t cache;  // index into the profile's caches (and the CatCacheSet)
  CatCacheKey key;
};

// Drawn before anything is timed, so the random numbers are not measured.
// Deterministic for a given profile, count and seed.
std::vector<Lookup> MakeFirstQueries(const SyscacheProfile& profile, int64_t lookups,
                                     uint64_t seed = kDefaultSeed);

struct FirstQueriesResult {
  int64_t hits = 0;
  int64_t misses = 0;
};

// Searches every lookup in order, loading misses.
absl::StatusOr<FirstQueriesResult> RunFirstQueries(CatCacheSet& caches, const std::vector<Lookup>& lookups);

}  // namespace backendlab::catcache

#endif  // BACKENDLAB_CATCACHE_FIRST_QUERIES_H_
