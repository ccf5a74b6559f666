// Fresh blocks whatever the history: a memory context's blocks are untouched
// zero pages, so writing a block faults each of its pages exactly once, even
// after this process wrote and freed large blocks that glibc keeps in its heap
// and would have handed to malloc, already resident.
#include <memory>
#include <optional>

#include "catcache/catcache.h"
#include "catcache/memory_context.h"
#include "catcache/syscache_profile.h"
#include "gtest/gtest.h"
#include "tests/test_util/page_faults.h"
#include "tests/test_util/skip.h"

namespace backendlab::catcache {
namespace {

using ::backendlab::test_util::Lack;
using ::backendlab::test_util::MinorFaults;
using ::backendlab::test_util::PolluteTheHeap;
using ::backendlab::test_util::WhyPagesAreNotCountable;

constexpr size_t kPage = 4096;

struct Faulted {
  int64_t faults = 0;
  int64_t pages = 0;  // of the blocks the context gained
};

// Creates a context and palloc0s `chunks` large chunks of `bytes` into it:
// each is a block of its own, every page of which the header or the memset
// writes.
Faulted CreateAndZero(int chunks, size_t bytes) {
  const int64_t before = MinorFaults();
  absl::StatusOr<MemoryContext> context = MemoryContext::Create();
  EXPECT_TRUE(context.ok()) << context.status();
  if (!context.ok()) return {};
  const size_t keeper = context->Stats().held_bytes;
  for (int i = 0; i < chunks; ++i) EXPECT_TRUE(context->AllocZero(bytes).ok());
  const size_t held = context->Stats().held_bytes;
  const int64_t faults = MinorFaults() - before;
  EXPECT_EQ((held - keeper) % chunks, 0U);
  const size_t block = (held - keeper) / chunks;
  // The keeper's header is on its first page; nothing else of it is written.
  return {faults, 1 + chunks * static_cast<int64_t>((block + kPage - 1) / kPage)};
}

TEST(FreshContextTest, EveryBlockFaultsEachPageItWritesOnceWhateverTheHeapHeld) {
  if (const std::optional<Lack> lack = WhyPagesAreNotCountable()) BACKENDLAB_SKIP(lack->need) << lack->why;
  constexpr int kChunks = 8;
  constexpr size_t kBytes = 60 * 1024;  // below glibc's 128 kB threshold: heap memory, if it came from malloc
  CreateAndZero(kChunks, kBytes);  // the first run also faults in this code and its stack
  const Faulted clean = CreateAndZero(kChunks, kBytes);
  EXPECT_EQ(clean.faults, clean.pages) << "before the heap held anything";
  ASSERT_TRUE(PolluteTheHeap());
  const Faulted polluted = CreateAndZero(kChunks, kBytes);
  EXPECT_EQ(polluted.faults, polluted.pages) << "after large blocks were written and freed";
  EXPECT_EQ(polluted.pages, 1 + kChunks * 16) << "a 60 kB chunk and its headers fit 16 pages";
}

TEST(FreshContextTest, ACatcacheInitFaultsTheSameWhateverTheHeapHeld) {
  if (const std::optional<Lack> lack = WhyPagesAreNotCountable()) BACKENDLAB_SKIP(lack->need) << lack->why;
  const absl::StatusOr<SyscacheProfile> profile = BuiltinProfile("pg90");
  ASSERT_TRUE(profile.ok()) << profile.status();
  auto init_faults = [&] {
    const int64_t before = MinorFaults();
    absl::StatusOr<std::unique_ptr<CatCacheSet>> set = CatCacheSet::Create(BucketStrategy::kPalloc0, *profile);
    const int64_t faults = MinorFaults() - before;
    EXPECT_TRUE(set.ok()) << set.status();
    return faults;
  };
  init_faults();  // the first run also faults in this code's data
  const int64_t clean = init_faults();
  // 9.0's initial bucket arrays: 174,592 bytes, 43 pages, all zeroed by palloc0.
  EXPECT_GE(clean, 43);
  ASSERT_TRUE(PolluteTheHeap());
  EXPECT_EQ(init_faults(), clean) << "after large blocks were written and freed";
}

}  // namespace
}  // namespace backendlab::catcache
