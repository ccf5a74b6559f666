// Fresh mappings and a thread's arena: what a backend thread's memory is.
#include "base/private_pages.h"

#include <unistd.h>

#include <cstring>

#include "base/resource_usage.h"
#include "gtest/gtest.h"

namespace backendlab {
namespace {

constexpr size_t kPages = 16;

// Whether `faults` are the first-touch faults of `pages` fresh pages
// written once each: exactly so; under ASan, every instrumented access
// reads its shadow byte first, up to one more fault per 8 pages (the
// shadow's page of them, one more where it straddles a page boundary),
// fewer where an earlier mapping at those addresses left its shadow mapped.
bool FreshFaults(int64_t faults, size_t pages) {
  const auto n = static_cast<int64_t>(pages);
#if defined(__SANITIZE_ADDRESS__)
  return faults >= n && faults <= n + n / 8 + 1;
#else
  return faults == n;
#endif
}

size_t Page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// First-touch faults of writing every page of [p, p + bytes), the
// calling thread's own.
int64_t WriteFaults(void* p, size_t bytes) {
  const ResourceSample before = SampleThread();
  auto* bytes_p = static_cast<volatile char*>(p);
  for (size_t off = 0; off < bytes; off += Page()) bytes_p[off] = 7;
  return (SampleThread() - before).minor_faults;
}

TEST(PrivatePagesTest, WithoutAnArenaEachMappingIsFreshAndFaultsEveryPage) {
  const size_t bytes = kPages * Page();
  void* p = MapPrivatePages(bytes);
  ASSERT_NE(p, nullptr);
  const int64_t faults = WriteFaults(p, bytes);
  EXPECT_TRUE(FreshFaults(faults, kPages)) << faults;
  UnmapPrivatePages(p, bytes);
}

TEST(PrivatePagesTest, AnArenaHandsBackAReleasedMappingOfTheSameLengthZeroedAndFaultedIn) {
  PageArena arena;
  const size_t bytes = kPages * Page();
  {
    ScopedPageArena scope(&arena);
    void* first = MapPrivatePages(bytes);
    ASSERT_NE(first, nullptr);
    const int64_t first_faults = WriteFaults(first, bytes);
    EXPECT_TRUE(FreshFaults(first_faults, kPages)) << first_faults;
    UnmapPrivatePages(first, bytes);
    EXPECT_EQ(arena.kept(), 1u);
    EXPECT_EQ(arena.kept_bytes(), bytes);

    // The same length (rounded up to pages): the same mapping, zeroed, no fault.
    void* again = MapPrivatePages(bytes - 10);
    EXPECT_EQ(again, first);
    EXPECT_EQ(arena.kept(), 0u);
    const auto* c = static_cast<const unsigned char*>(again);
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; ++i) nonzero += c[i] != 0;
    EXPECT_EQ(nonzero, 0u) << "calloc's promise";
    EXPECT_EQ(WriteFaults(again, bytes), 0);

    // Another length: fresh.
    void* other = MapPrivatePages(2 * bytes);
    ASSERT_NE(other, nullptr);
    EXPECT_NE(other, first);
    const int64_t other_faults = WriteFaults(other, 2 * bytes);
    EXPECT_TRUE(FreshFaults(other_faults, 2 * kPages)) << other_faults;
    UnmapPrivatePages(other, 2 * bytes);
    UnmapPrivatePages(again, bytes);
    EXPECT_EQ(arena.kept(), 2u);
  }
  // Out of the scope, a release goes to the kernel, not to the arena.
  void* fresh = MapPrivatePages(bytes);
  ASSERT_NE(fresh, nullptr);
  UnmapPrivatePages(fresh, bytes);
  EXPECT_EQ(arena.kept(), 2u);
}

}  // namespace
}  // namespace backendlab
