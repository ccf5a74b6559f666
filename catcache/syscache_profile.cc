// Parsing of the syscache fact table.
#include "catcache/syscache_profile.h"

#include <bit>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/names.h"

namespace backendlab::catcache {

uint64_t SyscacheProfile::TotalBuckets() const {
  uint64_t total = 0;
  for (const CacheSpec& c : caches) total += c.initial_buckets;
  return total;
}

absl::StatusOr<std::vector<SyscacheProfile>> ParseSyscacheTsv(std::string_view text) {
  std::vector<SyscacheProfile> profiles;
  for (const NamedValue<std::string_view>& p : kSyscacheNames) profiles.push_back({std::string(p.name), std::string(p.value), {}});
  std::vector<absl::flat_hash_set<std::string>> seen(profiles.size());
  bool header_seen = false;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
    auto error = [&](auto&&... what) {
      return absl::InvalidArgumentError(absl::StrCat("syscache TSV line ", line_number, ": ", what...));
    };
    if (fields.size() != 3) {
      return error("expected 3 tab-separated columns (version, cache, initial_buckets), found ", fields.size());
    }
    if (!header_seen) {
      if (fields[0] != "version" || fields[1] != "cache" || fields[2] != "initial_buckets") {
        return error("expected the header 'version<TAB>cache<TAB>initial_buckets'");
      }
      header_seen = true;
      continue;
    }
    size_t index = profiles.size();
    for (size_t i = 0; i < profiles.size(); ++i) {
      if (profiles[i].version == fields[0]) index = i;
    }
    if (index == profiles.size()) {
      std::vector<std::string> known;
      for (const NamedValue<std::string_view>& p : kSyscacheNames) known.emplace_back(p.value);
      return error("unknown version '", fields[0], "' (known: ", absl::StrJoin(known, ", "), ")");
    }
    if (fields[1].empty()) return error("empty cache name");
    uint64_t buckets = 0;
    if (!absl::SimpleAtoi(fields[2], &buckets)) {
      return error("initial_buckets '", fields[2], "' is not a whole number");
    }
    if (buckets == 0 || buckets > kMaxInitialBuckets || !std::has_single_bit(buckets)) {
      return error("initial_buckets ", buckets, " of ", fields[1], " is not a power of two in 1..", kMaxInitialBuckets);
    }
    if (!seen[index].insert(std::string(fields[1])).second) {
      return error("cache ", fields[1], " listed twice for version ", fields[0]);
    }
    profiles[index].caches.push_back({std::string(fields[1]), static_cast<uint32_t>(buckets)});
  }
  if (!header_seen) return absl::InvalidArgumentError("syscache TSV: no header line (empty input)");
  std::erase_if(profiles, [](const SyscacheProfile& p) { return p.caches.empty(); });
  return profiles;
}

absl::StatusOr<SyscacheProfile> BuiltinProfile(std::string_view name) {
  absl::StatusOr<std::string_view> known = ParseName(name, kSyscacheNames, "syscache");
  if (!known.ok()) return known.status();
  absl::StatusOr<std::vector<SyscacheProfile>> all = ParseSyscacheTsv(kSyscacheBucketsTsv);
  // The embedded table is ours, not the user's: a parse error is a broken
  // build, reported as a run failure (exit 1), not as bad input.
  if (!all.ok()) return absl::InternalError(absl::StrCat("the embedded syscache table: ", all.status().message()));
  for (SyscacheProfile& p : *all) {
    if (p.version == *known) return std::move(p);
  }
  return absl::InternalError(absl::StrCat("the embedded syscache table has no version ", std::string(*known)));
}

}  // namespace backendlab::catcache
