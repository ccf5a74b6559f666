// The AllocSet-like memory context: alignment, zeroing, reuse, release,
// statistics, and allocation failure as an error value.
#include "catcache/memory_context.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/catcache/failing_malloc.h"

namespace backendlab::catcache {
namespace {

MemoryContext MustCreate() {
  absl::StatusOr<MemoryContext> c = MemoryContext::Create();
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

void* MustAlloc(MemoryContext& c, size_t size) {
  absl::StatusOr<void*> p = c.Alloc(size);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : nullptr;
}

void ExpectStatsAddUp(const MemoryContextStats& s) {
  EXPECT_EQ(s.held_bytes, s.live_chunk_bytes + s.free_chunk_bytes + s.unused_bytes + s.block_header_bytes);
}

TEST(MemoryContextTest, ChunksAreAlignedAndKeepTheirSize) {
  MemoryContext c = MustCreate();
  for (size_t size : {0, 1, 7, 8, 15, 16, 17, 100, 1000, 4095, 8192, 8193, 20000, 100000}) {
    void* p = MustAlloc(c, size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kMaxAlign, 0u) << size;
    EXPECT_EQ(MemoryContext::ChunkRequestedSize(p), size);
    std::memset(p, 0x5a, size);  // the whole request is usable (ASan checks the bounds)
  }
  ExpectStatsAddUp(c.Stats());
}

TEST(MemoryContextTest, AllocZeroZeroesEvenReusedChunks) {
  MemoryContext c = MustCreate();
  for (size_t size : {24, 3000, 50000}) {
    void* dirty = MustAlloc(c, size);
    std::memset(dirty, 0xAB, size);
    c.Free(dirty);
    absl::StatusOr<void*> p = c.AllocZero(size);
    ASSERT_TRUE(p.ok());
    if (size <= kChunkLimit) {
      EXPECT_EQ(*p, dirty) << "a small chunk is reused from its free list";
    }
    const auto* bytes = static_cast<const unsigned char*>(*p);
    for (size_t i = 0; i < size; ++i) ASSERT_EQ(bytes[i], 0) << "size " << size << " byte " << i;
  }
  EXPECT_EQ(c.Stats().zeroed_bytes, 24u + 3000u + 50000u);
}

TEST(MemoryContextTest, SmallChunksAreReusedAfterFree) {
  MemoryContext c = MustCreate();
  std::vector<void*> first;
  for (int i = 0; i < 1000; ++i) first.push_back(MustAlloc(c, 200));
  const MemoryContextStats grown = c.Stats();
  for (void* p : first) c.Free(p);
  for (int round = 0; round < 10; ++round) {
    std::vector<void*> again;
    for (int i = 0; i < 1000; ++i) again.push_back(MustAlloc(c, 200));
    for (void* p : again) c.Free(p);
  }
  const MemoryContextStats after = c.Stats();
  EXPECT_EQ(after.held_bytes, grown.held_bytes) << "freed chunks must be reused, not new blocks taken";
  EXPECT_EQ(after.blocks, grown.blocks);
  EXPECT_EQ(after.live_chunks, 0);
  EXPECT_EQ(after.requested_bytes, 0u);
  ExpectStatsAddUp(after);
}

TEST(MemoryContextTest, LargeChunkIsItsOwnBlockAndGoesBackAtFree) {
  MemoryContext c = MustCreate();
  const MemoryContextStats before = c.Stats();
  void* p = MustAlloc(c, kChunkLimit + 1);
  const MemoryContextStats with = c.Stats();
  EXPECT_EQ(with.blocks, before.blocks + 1);
  EXPECT_GE(with.held_bytes, before.held_bytes + kChunkLimit + 1);
  c.Free(p);
  const MemoryContextStats after = c.Stats();
  EXPECT_EQ(after.blocks, before.blocks);
  EXPECT_EQ(after.held_bytes, before.held_bytes);
}

TEST(MemoryContextTest, BlocksGrowByDoubling) {
  MemoryContext c = MustCreate();
  for (int i = 0; i < 4096; ++i) MustAlloc(c, 1000);  // 4 MiB of 1 KiB-class chunks
  const MemoryContextStats s = c.Stats();
  // 8K + 8K + 16K + ... : about log2(4 MiB / 8 KiB) + 2 blocks, not 512.
  EXPECT_LE(s.blocks, 13);
  EXPECT_LE(s.held_bytes, 2 * s.live_chunk_bytes + kInitBlockSize) << "doubling wastes at most the last block";
  ExpectStatsAddUp(s);
}

TEST(MemoryContextTest, StatisticsAddUpUnderRandomAllocAndFree) {
  MemoryContext c = MustCreate();
  std::mt19937_64 rng(1);
  std::vector<std::pair<void*, size_t>> live;
  size_t requested = 0;
  for (int i = 0; i < 20000; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t k = rng() % live.size();
      requested -= live[k].second;
      c.Free(live[k].first);
      live[k] = live.back();
      live.pop_back();
    } else {
      const size_t size = rng() % 8 == 0 ? rng() % 40000 : rng() % 600;
      live.emplace_back(MustAlloc(c, size), size);
      requested += size;
    }
  }
  const MemoryContextStats s = c.Stats();
  EXPECT_EQ(s.requested_bytes, requested);
  EXPECT_EQ(s.live_chunks, static_cast<int64_t>(live.size()));
  ExpectStatsAddUp(s);
}

TEST(MemoryContextTest, ResetKeepsOnlyTheKeeperBlock) {
  MemoryContext c = MustCreate();
  for (int i = 0; i < 500; ++i) MustAlloc(c, 700);
  MustAlloc(c, 100000);
  ASSERT_GT(c.Stats().blocks, 2);
  c.Reset();
  const MemoryContextStats s = c.Stats();
  EXPECT_EQ(s.blocks, 1);
  EXPECT_EQ(s.held_bytes, kInitBlockSize);
  EXPECT_EQ(s.live_chunks, 0);
  EXPECT_EQ(s.requested_bytes, 0u);
  EXPECT_NE(MustAlloc(c, 64), nullptr) << "a reset context is usable";
  ExpectStatsAddUp(c.Stats());
}

TEST(MemoryContextTest, DeleteReleasesEverything) {
  MemoryContext c = MustCreate();
  for (int i = 0; i < 500; ++i) MustAlloc(c, 700);
  MustAlloc(c, 100000);
  c.Delete();
  const MemoryContextStats s = c.Stats();
  EXPECT_EQ(s.blocks, 0);
  EXPECT_EQ(s.held_bytes, 0u);
}

TEST(MemoryContextTest, MovedContextKeepsItsChunks) {
  MemoryContext a = MustCreate();
  void* p = MustAlloc(a, 100);
  MemoryContext b = std::move(a);
  EXPECT_EQ(b.Stats().live_chunks, 1);
  b.Free(p);
  EXPECT_EQ(b.Stats().live_chunks, 0);
}

TEST(MemoryContextTest, RequestAboveMaxAllocSizeIsAnError) {
  MemoryContext c = MustCreate();
  absl::StatusOr<void*> p = c.Alloc(kMaxAllocSize + 1);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(MustAlloc(c, 10), nullptr) << "the context is still usable";
}

TEST(MemoryContextTest, MallocFailureIsAnErrorValue) {
  testing_malloc::g_budget = 0;
  absl::StatusOr<MemoryContext> none = MemoryContext::Create(testing_malloc::FailingBlocks());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);

  testing_malloc::g_budget = 1;  // the keeper only
  absl::StatusOr<MemoryContext> c = MemoryContext::Create(testing_malloc::FailingBlocks());
  ASSERT_TRUE(c.ok());
  absl::StatusOr<void*> large = c->Alloc(100000);
  ASSERT_FALSE(large.ok());
  EXPECT_EQ(large.status().code(), absl::StatusCode::kResourceExhausted);
  // Small chunks come from the keeper until it is full, then fail cleanly.
  absl::Status last;
  int served = 0;
  for (int i = 0; i < 100 && last.ok(); ++i) {
    absl::StatusOr<void*> p = c->Alloc(1000);
    last = p.status();
    served += p.ok();
  }
  EXPECT_GT(served, 0);
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted);
  ExpectStatsAddUp(c->Stats());
  EXPECT_EQ(c->Stats().live_chunks, served);
}

TEST(MemoryContextDeathTest, DoubleFreeAborts) {
  MemoryContext c = MustCreate();
  void* p = MustAlloc(c, 32);
  c.Free(p);
  EXPECT_DEATH(c.Free(p), "check failed");
}

}  // namespace
}  // namespace backendlab::catcache
