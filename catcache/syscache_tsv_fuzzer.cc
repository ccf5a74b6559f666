// libFuzzer target: ParseSyscacheTsv on any bytes. An accepted table holds
// only known versions, each with caches whose bucket counts are powers of two
// within the limit and whose names are unique, and written back as TSV it
// parses to the same profiles.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "catcache/syscache_profile.h"

namespace {

using backendlab::catcache::SyscacheProfile;

bool Same(const std::vector<SyscacheProfile>& a, const std::vector<SyscacheProfile>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].version != b[i].version || a[i].caches.size() != b[i].caches.size()) return false;
    for (size_t j = 0; j < a[i].caches.size(); ++j) {
      if (a[i].caches[j].name != b[i].caches[j].name ||
          a[i].caches[j].initial_buckets != b[i].caches[j].initial_buckets) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace backendlab::catcache;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<std::vector<SyscacheProfile>> profiles = ParseSyscacheTsv(text);
  if (!profiles.ok()) return 0;
  std::string tsv = "version\tcache\tinitial_buckets\n";
  for (const SyscacheProfile& p : *profiles) {
    BACKENDLAB_CHECK(!p.caches.empty());
    std::set<std::string> names;
    for (const CacheSpec& c : p.caches) {
      BACKENDLAB_CHECK(!c.name.empty() && names.insert(c.name).second);
      BACKENDLAB_CHECK(c.initial_buckets >= 1 && c.initial_buckets <= kMaxInitialBuckets);
      BACKENDLAB_CHECK((c.initial_buckets & (c.initial_buckets - 1)) == 0);
      absl::StrAppend(&tsv, p.version, "\t", c.name, "\t", c.initial_buckets, "\n");
    }
  }
  const absl::StatusOr<std::vector<SyscacheProfile>> again = ParseSyscacheTsv(tsv);
  BACKENDLAB_CHECK(again.ok() && Same(*again, *profiles));
  return 0;
}
