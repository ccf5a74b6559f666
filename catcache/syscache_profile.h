// Syscache profiles: which catalog caches a PostgreSQL version has and how
// many buckets each starts with, parsed from the TSV fact table.
#ifndef BACKENDLAB_CATCACHE_SYSCACHE_PROFILE_H_
#define BACKENDLAB_CATCACHE_SYSCACHE_PROFILE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace backendlab::catcache {

// A cache's initial bucket count must be a power of two (hash & (n - 1) picks
// the bucket, as in catcache.c) and at most this.
inline constexpr uint32_t kMaxInitialBuckets = uint32_t{1} << 20;

struct CacheSpec {
  std::string name;          // the SysCacheIdentifier, e.g. "RELOID"
  uint32_t initial_buckets;  // a power of two
};

struct SyscacheProfile {
  std::string name;     // "pg90" or "pg17": the word used by flags and reports
  std::string version;  // "9.0" or "17": the TSV's version column
  std::vector<CacheSpec> caches;  // in file order

  uint64_t TotalBuckets() const;
};

// The profile names known to the TSV format, and the version each reads.
struct ProfileName {
  std::string_view name;
  std::string_view version;
};
inline constexpr ProfileName kProfileNames[] = {{"pg90", "9.0"}, {"pg17", "17"}};

// Parses the TSV format: a header line "version<TAB>cache<TAB>initial_buckets",
// then one line per cache. Empty lines are skipped. Every error is
// InvalidArgument naming the line: a wrong column count, an unknown version,
// a bucket count that is not a positive power of two <= kMaxInitialBuckets, a
// cache listed twice for one version. Returns one profile per version present,
// in kProfileNames order.
absl::StatusOr<std::vector<SyscacheProfile>> ParseSyscacheTsv(std::string_view text);

// The built-in profiles, from the embedded copy of the fact table.
// InvalidArgument for a name not in kProfileNames.
absl::StatusOr<SyscacheProfile> BuiltinProfile(std::string_view name);

// The embedded TSV (syscache_buckets_data.cc).
extern const char kSyscacheBucketsTsv[];

}  // namespace backendlab::catcache

#endif  // BACKENDLAB_CATCACHE_SYSCACHE_PROFILE_H_
