// A start's layout: drawn within its ranges, the same for the same seed,
// different across the starts of a run.
#include "base/start_layout.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "gtest/gtest.h"
#include "tests/test_util/sanitizers.h"

namespace backendlab {
namespace {

TEST(StartLayoutTest, EachPartIsDrawnWithinItsRangeAndTakesManyValues) {
  const int64_t page = sysconf(_SC_PAGESIZE);
  std::set<int64_t> stacks, heaps, mmaps;
  std::set<int> names;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const StartLayout l = DrawStartLayout(seed);
    ASSERT_GE(l.stack_bytes, 0);
    ASSERT_LE(l.stack_bytes, kMaxStackBytes);
    ASSERT_EQ(l.stack_bytes % 16, 0);
    ASSERT_GE(l.heap_bytes, 0);
    ASSERT_LE(l.heap_bytes, kMaxHeapBytes);
    ASSERT_EQ(l.heap_bytes % 16, 0);
    ASSERT_GE(l.mmap_bytes, 0);
    ASSERT_LE(l.mmap_bytes, kMaxMmapPages * page);
    ASSERT_EQ(l.mmap_bytes % page, 0);
    ASSERT_GE(l.name_chars, 0);
    ASSERT_LE(l.name_chars, kMaxNameChars);
    stacks.insert(l.stack_bytes);
    heaps.insert(l.heap_bytes);
    mmaps.insert(l.mmap_bytes);
    names.insert(l.name_chars);
  }
  // 1000 draws of 4097 stack and heap values, 129 mapping and 17 name
  // values: far more than half of each (the chance of fewer is nil).
  EXPECT_GT(stacks.size(), 800u);
  EXPECT_GT(heaps.size(), 800u);
  EXPECT_GT(mmaps.size(), 120u);
  EXPECT_EQ(names.size(), static_cast<size_t>(kMaxNameChars + 1));
}

TEST(StartLayoutTest, TheSameSeedDrawsTheSameLayout) {
  const StartLayout a = DrawStartLayout(StartSeed(7, 3, 12));
  const StartLayout b = DrawStartLayout(StartSeed(7, 3, 12));
  EXPECT_EQ(a.stack_bytes, b.stack_bytes);
  EXPECT_EQ(a.heap_bytes, b.heap_bytes);
  EXPECT_EQ(a.mmap_bytes, b.mmap_bytes);
  EXPECT_EQ(a.name_chars, b.name_chars);
}

TEST(StartLayoutTest, EveryStartOfARunHasASeedOfItsOwn) {
  std::set<uint64_t> seeds;
  for (uint64_t config = 0; config < 40; ++config) {
    for (int64_t round = 0; round < 1000; ++round) seeds.insert(StartSeed(1, config, round));
  }
  EXPECT_EQ(seeds.size(), 40'000u);
  EXPECT_NE(StartSeed(1, 0, 0), StartSeed(2, 0, 0));
}

TEST(StartLayoutTest, ApplyingALayoutMovesTheNextMapping) {
  if (test_util::kAddressSanitizer) {
    GTEST_SKIP() << "AddressSanitizer's shadow and allocator leave holes across the address space, where the kernel "
                    "places the layout's mapping instead of below the last (measured: it landed above it)";
  }
  // Top-down placement: a mapping made after the layout's sits at least
  // its size lower than one made before it would have (a mapping small
  // enough for a hole above the layout's goes there instead: this one is
  // larger than the layout's; no heap offset, whose allocation may be a
  // mapping of its own under a sanitizer's allocator). Measured in a child, so that this process
  // keeps its own layout.
  StartLayout l;
  l.mmap_bytes = 64 * sysconf(_SC_PAGESIZE);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const size_t size = 4 * static_cast<size_t>(l.mmap_bytes);
    void* before = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(before, size);
    ApplyStartLayout(l);
    void* after = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const bool moved = static_cast<char*>(before) - static_cast<char*>(after) >= l.mmap_bytes;
    _exit(moved ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the mapping after the layout's did not move down";
}

}  // namespace
}  // namespace backendlab
