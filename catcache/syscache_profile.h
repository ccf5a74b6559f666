// The syscaches of PostgreSQL versions: which catalog caches a version has
// and how many buckets each starts with (a SyscacheProfile), parsed from the
// TSV fact table. Users name one by its syscache name (`--syscache=pg17`,
// JSON "syscache": "pg17").
#ifndef BACKENDLAB_CATCACHE_SYSCACHE_PROFILE_H_
#define BACKENDLAB_CATCACHE_SYSCACHE_PROFILE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/names.h"

namespace backendlab::catcache {

// A cache's initial bucket count must be a power of two (hash & (n - 1) picks
// the bucket, as in catcache.c) and at most this.
inline constexpr uint32_t kMaxInitialBuckets = uint32_t{1} << 20;

struct CacheSpec {
  std::string name;          // the SysCacheIdentifier, e.g. "RELOID"
  uint32_t initial_buckets;  // a power of two
};

struct SyscacheProfile {
  std::string name;     // "pg90" or "pg17": the syscache name of flags and reports
  std::string version;  // "9.0" or "17": the TSV's version column
  std::vector<CacheSpec> caches;  // in file order

  uint64_t TotalBuckets() const;
};

// The syscache names known to the TSV format; the value is the version
// (the TSV's version column) each name reads.
inline constexpr NamedValue<std::string_view> kSyscacheNames[] = {{"9.0", "pg90"}, {"17", "pg17"}};

// Parses the TSV format: a header line "version<TAB>cache<TAB>initial_buckets",
// then one line per cache. Empty lines are skipped. Every error is
// InvalidArgument naming the line: a wrong column count, an unknown version,
// a bucket count that is not a positive power of two <= kMaxInitialBuckets, a
// cache listed twice for one version. Returns one profile per version present,
// in kSyscacheNames order.
absl::StatusOr<std::vector<SyscacheProfile>> ParseSyscacheTsv(std::string_view text);

// The built-in syscache `name` ("pg90", "pg17"), from the embedded fact table.
// InvalidArgument for a name not in kSyscacheNames ("unknown syscache ...").
absl::StatusOr<SyscacheProfile> BuiltinProfile(std::string_view name);

// The embedded TSV: catcache/syscache_buckets.tsv, compiled in by CMake.
extern const char kSyscacheBucketsTsv[];

}  // namespace backendlab::catcache

#endif  // BACKENDLAB_CATCACHE_SYSCACHE_PROFILE_H_
