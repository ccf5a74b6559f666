// Syscache profiles: the built-in ones match the facts; malformed TSV is a
// clear error naming the line.
#include "catcache/syscache_profile.h"

#include <map>
#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace backendlab::catcache {
namespace {

TEST(SyscacheProfileTest, Pg90Has56CachesAnd21824Buckets) {
  absl::StatusOr<SyscacheProfile> p = BuiltinProfile("pg90");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->version, "9.0");
  EXPECT_EQ(p->caches.size(), 56u);
  EXPECT_EQ(p->TotalBuckets(), 21824u);
}

TEST(SyscacheProfileTest, Pg17Has84CachesAnd2444BucketsWithTheKnownDistribution) {
  absl::StatusOr<SyscacheProfile> p = BuiltinProfile("pg17");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->version, "17");
  EXPECT_EQ(p->caches.size(), 84u);
  EXPECT_EQ(p->TotalBuckets(), 2444u);
  std::map<uint32_t, int> histogram;
  for (const CacheSpec& c : p->caches) ++histogram[c.initial_buckets];
  const std::map<uint32_t, int> expected = {{2, 16}, {4, 17}, {8, 21}, {16, 8}, {32, 4}, {64, 10}, {128, 6}, {256, 2}};
  EXPECT_EQ(histogram, expected);
}

TEST(SyscacheProfileTest, CommitFacts) {
  // Commit 20cb18db shrank ATTNUM 2048 -> 128 and RELOID 1024 -> 128.
  auto size_of = [](const SyscacheProfile& p, const std::string& name) -> uint32_t {
    for (const CacheSpec& c : p.caches) {
      if (c.name == name) return c.initial_buckets;
    }
    return 0;
  };
  const SyscacheProfile pg90 = *BuiltinProfile("pg90"), pg17 = *BuiltinProfile("pg17");
  EXPECT_EQ(size_of(pg90, "ATTNUM"), 2048u);
  EXPECT_EQ(size_of(pg17, "ATTNUM"), 128u);
  EXPECT_EQ(size_of(pg90, "RELOID"), 1024u);
  EXPECT_EQ(size_of(pg17, "RELOID"), 128u);
}

TEST(SyscacheProfileTest, UnknownProfileIsAnError) {
  absl::StatusOr<SyscacheProfile> p = BuiltinProfile("pg96");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("pg96"), absl::string_view::npos);
}

TEST(SyscacheProfileTest, ParsesAWellFormedTable) {
  absl::StatusOr<std::vector<SyscacheProfile>> ps =
      ParseSyscacheTsv("version\tcache\tinitial_buckets\n17\tRELOID\t128\r\n\n17\tTYPEOID\t64\n9.0\tRELOID\t1024\n");
  ASSERT_TRUE(ps.ok()) << ps.status();
  ASSERT_EQ(ps->size(), 2u);
  EXPECT_EQ((*ps)[0].name, "pg90");
  EXPECT_EQ((*ps)[0].caches.size(), 1u);
  EXPECT_EQ((*ps)[1].name, "pg17");
  EXPECT_EQ((*ps)[1].TotalBuckets(), 192u);
}

struct Malformed {
  const char* what;
  const char* tsv;
  const char* message_part;
  friend void PrintTo(const Malformed& m, std::ostream* os) { *os << m.what; }
};

class MalformedTsvTest : public testing::TestWithParam<Malformed> {};

TEST_P(MalformedTsvTest, IsAClearError) {
  absl::StatusOr<std::vector<SyscacheProfile>> ps = ParseSyscacheTsv(GetParam().tsv);
  ASSERT_FALSE(ps.ok()) << GetParam().what;
  EXPECT_EQ(ps.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ps.status().message().find(GetParam().message_part), absl::string_view::npos)
      << GetParam().what << ": " << ps.status().message();
}

constexpr const char* kHeader = "version\tcache\tinitial_buckets\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedTsvTest,
    testing::Values(Malformed{"empty", "", "no header"},
                    Malformed{"no header", "17\tRELOID\t128\n", "line 1: expected the header"},
                    Malformed{"two columns", "version\tcache\tinitial_buckets\n17\tRELOID\n", "line 2: expected 3"},
                    Malformed{"four columns", "version\tcache\tinitial_buckets\n17\tRELOID\t128\tx\n", "found 4"},
                    Malformed{"spaces not tabs", "version\tcache\tinitial_buckets\n17 RELOID 128\n", "found 1"},
                    Malformed{"non-numeric", "version\tcache\tinitial_buckets\n17\tRELOID\tmany\n", "not a whole number"},
                    Malformed{"negative", "version\tcache\tinitial_buckets\n17\tRELOID\t-4\n", "not a whole number"},
                    Malformed{"zero", "version\tcache\tinitial_buckets\n17\tRELOID\t0\n", "not a power of two"},
                    Malformed{"not a power of two", "version\tcache\tinitial_buckets\n17\tRELOID\t100\n", "not a power of two"},
                    Malformed{"too large", "version\tcache\tinitial_buckets\n17\tRELOID\t4194304\n", "not a power of two"},
                    Malformed{"unknown version", "version\tcache\tinitial_buckets\n12\tRELOID\t128\n", "unknown version '12'"},
                    Malformed{"empty cache name", "version\tcache\tinitial_buckets\n17\t\t128\n", "empty cache name"},
                    Malformed{"duplicate", "version\tcache\tinitial_buckets\n17\tA\t2\n17\tA\t4\n", "line 3: cache A listed twice"}),
    [](const testing::TestParamInfo<Malformed>& param_info) {
      std::string name = param_info.param.what;
      for (char& c : name) {
        if (c == ' ' || c == '-') c = '_';
      }
      return name;
    });

TEST(SyscacheProfileTest, HeaderConstantIsTheOneTheParserWants) {
  EXPECT_TRUE(ParseSyscacheTsv(std::string(kHeader) + "17\tX\t2\n").ok());
}

}  // namespace
}  // namespace backendlab::catcache
