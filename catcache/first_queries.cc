// Skewed lookups of a new backend's first queries.
#include "catcache/first_queries.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "base/check.h"

namespace backendlab::catcache {
namespace {

// Cumulative weights 1/r^s for r = 1..n, to draw ranks by binary search.
std::vector<double> ZipfCdf(size_t n, double s) {
  std::vector<double> cdf(n);
  double sum = 0;
  for (size_t r = 0; r < n; ++r) {
    sum += 1.0 / std::pow(static_cast<double>(r + 1), s);
    cdf[r] = sum;
  }
  return cdf;
}

size_t Draw(const std::vector<double>& cdf, std::mt19937_64& rng) {
  // 53 random bits -> [0, 1), independent of the library's distributions.
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * cdf.back();
  return static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
}

}  // namespace

std::vector<Lookup> MakeFirstQueries(const SyscacheProfile& profile, int64_t lookups, uint64_t seed) {
  BACKENDLAB_CHECK(lookups >= 0);
  // Cache ranks: the hot list first, then the rest in file order.
  std::vector<uint32_t> by_rank;
  for (std::string_view hot : kHotCaches) {
    for (size_t i = 0; i < profile.caches.size(); ++i) {
      if (profile.caches[i].name == hot) by_rank.push_back(static_cast<uint32_t>(i));
    }
  }
  for (size_t i = 0; i < profile.caches.size(); ++i) {
    if (std::find(by_rank.begin(), by_rank.end(), i) == by_rank.end()) by_rank.push_back(static_cast<uint32_t>(i));
  }
  if (by_rank.empty()) return {};
  const std::vector<double> cache_cdf = ZipfCdf(by_rank.size(), kCacheZipf);
  const std::vector<double> key_cdf = ZipfCdf(kKeysPerCache, kKeyZipf);
  std::mt19937_64 rng(seed);
  std::vector<Lookup> out;
  out.reserve(static_cast<size_t>(lookups));
  for (int64_t i = 0; i < lookups; ++i) {
    const uint32_t cache = by_rank[std::min(Draw(cache_cdf, rng), by_rank.size() - 1)];
    const uint64_t k = std::min<uint64_t>(Draw(key_cdf, rng), kKeysPerCache - 1);
    // Two key columns, like (attrelid, attnum): an OID above
    // FirstNormalObjectId (16384) and a small second column.
    out.push_back({cache, {16384 + k, k % 7, 0, 0}});
  }
  return out;
}

absl::StatusOr<FirstQueriesResult> RunFirstQueries(CatCacheSet& caches, const std::vector<Lookup>& lookups) {
  FirstQueriesResult result;
  const int64_t misses_before = caches.misses();
  for (const Lookup& l : lookups) {
    absl::StatusOr<const CatCacheEntry*> e = caches.Search(l.cache, l.key);
    if (!e.ok()) return e.status();
  }
  result.misses = caches.misses() - misses_before;
  result.hits = static_cast<int64_t>(lookups.size()) - result.misses;
  return result;
}

}  // namespace backendlab::catcache
