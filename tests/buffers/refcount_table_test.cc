// Refcount layouts: creation limits, pin/unpin, errors, count overflow, overflow maps, memory, names.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/resource_usage.h"
#include "buffers/array_refcount.h"
#include "buffers/array_touched_refcount.h"
#include "buffers/byte_refcount.h"
#include "buffers/hash_keys_refcount.h"
#include "buffers/hash_refcount.h"
#include "buffers/layout_dispatch.h"
#include "buffers/refcount_table.h"
#include "buffers/scan_kernels.h"
#include "gtest/gtest.h"
#include "tests/test_util/sanitizers.h"
#include "tests/buffers/layout_test_types.h"

namespace backendlab::buffers {
namespace {

using test_util::CountOrMinusOne;
using test_util::OverflowEntriesOf;
using test_util::PinTimes;

constexpr uint32_t kTableBuffers = 1000;
constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();

template <typename T>
class RefCountTableTest : public ::testing::Test {};
TYPED_TEST_SUITE(RefCountTableTest, test_util::AllLayoutTypes, test_util::LayoutTypeName);

TYPED_TEST(RefCountTableTest, CreateRejectsZeroAndAboveTheLimit) {
  absl::StatusOr<TypeParam> zero = TypeParam::Create(0);
  EXPECT_TRUE(absl::IsInvalidArgument(zero.status())) << zero.status();
  absl::StatusOr<TypeParam> too_many = TypeParam::Create(kMaxNBuffers + 1);
  EXPECT_TRUE(absl::IsInvalidArgument(too_many.status())) << too_many.status();
  EXPECT_NE(std::string(too_many.status().message()).find("limit"), std::string::npos) << too_many.status();

  absl::StatusOr<TypeParam> one = TypeParam::Create(1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->nbuffers(), 1u);
  EXPECT_EQ(CountOrMinusOne(*one, 0), 0);
  EXPECT_TRUE(absl::IsOutOfRange(one->Count(1).status()));
  EXPECT_TRUE(one->Pin(0).ok());
  EXPECT_EQ(CountOrMinusOne(*one, 0), 1);
}

TYPED_TEST(RefCountTableTest, PinAndUnpinCountPerBuffer) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->nbuffers(), kTableBuffers);
  EXPECT_EQ(table->HeldCount(), 0u);

  ASSERT_TRUE(table->Pin(3).ok());
  ASSERT_TRUE(table->Pin(3).ok());
  ASSERT_TRUE(table->Pin(0).ok());
  ASSERT_TRUE(table->Pin(kTableBuffers - 1).ok());
  EXPECT_EQ(CountOrMinusOne(*table, 3), 2);
  EXPECT_EQ(CountOrMinusOne(*table, 0), 1);
  EXPECT_EQ(CountOrMinusOne(*table, kTableBuffers - 1), 1);
  EXPECT_EQ(CountOrMinusOne(*table, 4), 0);
  EXPECT_EQ(table->HeldCount(), 3u);

  ASSERT_TRUE(table->Unpin(3).ok());
  EXPECT_EQ(CountOrMinusOne(*table, 3), 1);
  EXPECT_EQ(table->HeldCount(), 3u);
  ASSERT_TRUE(table->Unpin(3).ok());
  EXPECT_EQ(CountOrMinusOne(*table, 3), 0);
  EXPECT_EQ(table->HeldCount(), 2u);
  const std::vector<Leak> expected = {{0, 1}, {kTableBuffers - 1, 1}};
  EXPECT_EQ(table->FindLeaks(ScanKernel::kNaive), expected);
}

// With more than 8 buffers held, so `hash` takes its overflow path too.
TYPED_TEST(RefCountTableTest, UnpinOfUnpinnedBufferIsFailedPreconditionAndChangesNothing) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  for (int held : {0, 1, 8, 12}) {
    SCOPED_TRACE(held);
    table->ReleaseAll();
    for (BufferId b = 0; b < static_cast<BufferId>(held); ++b) ASSERT_TRUE(PinTimes(*table, b * 7, b + 1));
    const std::vector<Leak> before = table->FindLeaks(ScanKernel::kNaive);
    for (BufferId b : {BufferId{1}, BufferId{500}, kTableBuffers - 1}) {
      const absl::Status s = table->Unpin(b);
      EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
      EXPECT_NE(std::string(s.message()).find(std::to_string(b)), std::string::npos) << s;
    }
    EXPECT_EQ(table->FindLeaks(ScanKernel::kNaive), before);
    EXPECT_EQ(table->HeldCount(), static_cast<size_t>(held));
  }
}

TYPED_TEST(RefCountTableTest, BufferIdsFromNBuffersUpAreOutOfRange) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE(table->Pin(5).ok());
  for (BufferId b : {kTableBuffers, kTableBuffers + 1, kMaxNBuffers, std::numeric_limits<BufferId>::max()}) {
    SCOPED_TRACE(b);
    EXPECT_TRUE(absl::IsOutOfRange(table->Pin(b)));
    EXPECT_TRUE(absl::IsOutOfRange(table->Unpin(b)));
    EXPECT_TRUE(absl::IsOutOfRange(table->Count(b).status()));
  }
  EXPECT_EQ(table->HeldCount(), 1u);
  EXPECT_EQ(CountOrMinusOne(*table, 5), 1);
}

// Buffer ids that share their low bits (k * 257 and friends) must never be
// confused: a fast lookup may key on low bits, the answer may not.
TYPED_TEST(RefCountTableTest, BuffersSharingLowBitsStayDistinct) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(1u << 20);
  ASSERT_TRUE(table.ok()) << table.status();
  std::vector<BufferId> buffers;
  for (BufferId k = 0; k < 12; ++k) buffers.push_back(k * 257);
  for (BufferId b : {BufferId{1}, BufferId{256}, BufferId{1} << 16, (BufferId{1} << 16) + 1, (BufferId{1} << 19) | 3}) {
    buffers.push_back(b);
  }
  for (size_t i = 0; i < buffers.size(); ++i) ASSERT_TRUE(PinTimes(*table, buffers[i], static_cast<int64_t>(i) + 1));
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(CountOrMinusOne(*table, buffers[i]), static_cast<int64_t>(i) + 1);
  }
  EXPECT_EQ(CountOrMinusOne(*table, 2 * 257 + 1), 0);
  EXPECT_EQ(table->HeldCount(), buffers.size());
  // Unpin in a different order from the pins; each count drops only its own.
  for (size_t i = buffers.size(); i-- > 0;) {
    ASSERT_TRUE(table->Unpin(buffers[i]).ok());
    for (size_t j = 0; j < buffers.size(); ++j) {
      EXPECT_EQ(CountOrMinusOne(*table, buffers[j]), static_cast<int64_t>(j) + (j == i ? 0 : 1));
    }
    ASSERT_TRUE(PinTimes(*table, buffers[i], 1));
  }
}

TYPED_TEST(RefCountTableTest, FindLeaksIsAscendingAndExactForEveryKernel) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  // Pinned in descending order, with counts crossing 255 for `bytes`.
  const std::vector<Leak> planted = {{kTableBuffers - 1, 3}, {700, 300}, {512, 1}, {64, 255}, {63, 254}, {9, 2},
                                     {8, 1},      {7, 7},     {1, 1},   {0, 1000}};
  for (const Leak& leak : planted) ASSERT_TRUE(PinTimes(*table, leak.buffer, leak.count));
  const std::vector<Leak> expected(planted.rbegin(), planted.rend());
  for (ScanKernel kernel : kAllScanKernels) {
    EXPECT_EQ(table->FindLeaks(kernel), expected) << ScanKernelName(kernel);
  }
  EXPECT_EQ(table->HeldCount(), planted.size());
}

TYPED_TEST(RefCountTableTest, ReleaseAllLeavesAnEmptyReusableTable) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  table->ReleaseAll();  // on an empty table: harmless
  EXPECT_EQ(table->HeldCount(), 0u);

  for (BufferId b = 0; b < 12; ++b) ASSERT_TRUE(PinTimes(*table, b * 80, 1 + b));
  ASSERT_TRUE(PinTimes(*table, 999, 300));
  ASSERT_GT(table->HeldCount(), 0u);
  table->ReleaseAll();
  EXPECT_EQ(table->HeldCount(), 0u);
  EXPECT_EQ(OverflowEntriesOf(*table), 0u);
  for (ScanKernel kernel : kAllScanKernels) EXPECT_TRUE(table->FindLeaks(kernel).empty()) << ScanKernelName(kernel);
  for (BufferId b = 0; b < 12; ++b) EXPECT_EQ(CountOrMinusOne(*table, b * 80), 0);
  EXPECT_EQ(CountOrMinusOne(*table, 999), 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(table->Unpin(999)));

  ASSERT_TRUE(table->Pin(999).ok());
  EXPECT_EQ(CountOrMinusOne(*table, 999), 1);
  EXPECT_EQ(table->HeldCount(), 1u);
}

TYPED_TEST(RefCountTableTest, MovedTableKeepsItsCounts) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  for (BufferId b = 0; b < 10; ++b) ASSERT_TRUE(PinTimes(*table, b * 3, b + 1));
  ASSERT_TRUE(PinTimes(*table, 500, 256));
  TypeParam moved = *std::move(table);
  EXPECT_EQ(moved.nbuffers(), kTableBuffers);
  EXPECT_EQ(moved.HeldCount(), 11u);
  for (BufferId b = 0; b < 10; ++b) EXPECT_EQ(CountOrMinusOne(moved, b * 3), int64_t{b} + 1);
  EXPECT_EQ(CountOrMinusOne(moved, 500), 256);
  EXPECT_TRUE(moved.Unpin(500).ok());
  EXPECT_EQ(CountOrMinusOne(moved, 500), 255);
}

TYPED_TEST(RefCountTableTest, WithLayoutDispatchesToThisType) {
  const Layout chosen = WithLayout(TypeParam::kLayout, []<RefCountTable T>() { return T::kLayout; });
  EXPECT_EQ(chosen, TypeParam::kLayout);
}

// The layouts with a count seam: array, bytes, hash-keys, array-touched.
template <typename T>
class CountOverflowTest : public ::testing::Test {};
using SeamLayoutTypes = ::testing::Types<ArrayRefCount, ByteRefCount, HashKeysRefCount, ArrayTouchedRefCount>;
TYPED_TEST_SUITE(CountOverflowTest, SeamLayoutTypes, test_util::LayoutTypeName);

TYPED_TEST(CountOverflowTest, PinPastInt32MaxIsResourceExhaustedAndLeavesTheCount) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  table->SetCountForTesting(7, kInt32Max - 1);
  ASSERT_TRUE(table->Pin(7).ok());
  EXPECT_EQ(CountOrMinusOne(*table, 7), kInt32Max);
  const absl::Status s = table->Pin(7);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_EQ(CountOrMinusOne(*table, 7), kInt32Max);
  EXPECT_EQ(table->HeldCount(), 1u);
  const std::vector<Leak> expected = {{7, kInt32Max}};
  for (ScanKernel kernel : kAllScanKernels) EXPECT_EQ(table->FindLeaks(kernel), expected);
  ASSERT_TRUE(table->Unpin(7).ok());
  EXPECT_EQ(CountOrMinusOne(*table, 7), kInt32Max - 1);
}

// `bytes`: counts below 255 live in the byte, 255 and above in the map, exact
// at every count on the way up to 65537 and back down to 0.
TEST(ByteRefCountTest, CountsAreExactAcrossTheByteAndSixteenBitBoundaries) {
  absl::StatusOr<ByteRefCount> table = ByteRefCount::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  constexpr BufferId kB = 321;
  constexpr int32_t kTop = 65'537;
  ASSERT_TRUE(table->Pin(kB + 1).ok());  // a neighbour that must not move
  for (int32_t k = 1; k <= kTop; ++k) {
    ASSERT_TRUE(table->Pin(kB).ok()) << "pin to " << k;
    ASSERT_EQ(CountOrMinusOne(*table, kB), k);
    ASSERT_EQ(table->OverflowEntries(), k >= 255 ? 1u : 0u) << "at count " << k;
  }
  for (int32_t k = kTop - 1; k >= 0; --k) {
    ASSERT_TRUE(table->Unpin(kB).ok()) << "unpin to " << k;
    ASSERT_EQ(CountOrMinusOne(*table, kB), k);
    ASSERT_EQ(table->OverflowEntries(), k >= 255 ? 1u : 0u) << "at count " << k;
  }
  EXPECT_TRUE(absl::IsFailedPrecondition(table->Unpin(kB)));
  EXPECT_EQ(CountOrMinusOne(*table, kB + 1), 1);
  EXPECT_EQ(table->HeldCount(), 1u);
}

TEST(ByteRefCountTest, NamedBoundaryCounts) {
  absl::StatusOr<ByteRefCount> table = ByteRefCount::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  struct Case {
    int32_t count;
    size_t overflow;
  };
  for (const Case& c : {Case{254, 0}, Case{255, 1}, Case{256, 1}, Case{65'535, 1}, Case{65'536, 1}}) {
    SCOPED_TRACE(c.count);
    table->ReleaseAll();
    ASSERT_TRUE(PinTimes(*table, 10, c.count));
    EXPECT_EQ(CountOrMinusOne(*table, 10), c.count);
    EXPECT_EQ(table->OverflowEntries(), c.overflow);
    const std::vector<Leak> expected = {{10, c.count}};
    for (ScanKernel kernel : kAllScanKernels) EXPECT_EQ(table->FindLeaks(kernel), expected);
    // One down and one up again lands on the same count.
    ASSERT_TRUE(table->Unpin(10).ok());
    EXPECT_EQ(CountOrMinusOne(*table, 10), c.count - 1);
    EXPECT_EQ(table->OverflowEntries(), c.count - 1 >= 255 ? 1u : 0u);
    ASSERT_TRUE(table->Pin(10).ok());
    EXPECT_EQ(CountOrMinusOne(*table, 10), c.count);
    EXPECT_EQ(table->OverflowEntries(), c.overflow);
  }
}

TEST(ByteRefCountTest, SetCountForTestingKeepsTheOverflowInvariant) {
  absl::StatusOr<ByteRefCount> table = ByteRefCount::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  table->SetCountForTesting(4, 300);
  EXPECT_EQ(CountOrMinusOne(*table, 4), 300);
  EXPECT_EQ(table->OverflowEntries(), 1u);
  table->SetCountForTesting(4, 3);
  EXPECT_EQ(CountOrMinusOne(*table, 4), 3);
  EXPECT_EQ(table->OverflowEntries(), 0u);
  table->SetCountForTesting(4, 255);
  ASSERT_TRUE(table->Unpin(4).ok());
  EXPECT_EQ(CountOrMinusOne(*table, 4), 254);
  EXPECT_EQ(table->OverflowEntries(), 0u);
}

TEST(HashRefCountTest, MoreThanEightDistinctBuffersOverflowTheInlineEntries) {
  absl::StatusOr<HashRefCount> table = HashRefCount::Create(kTableBuffers);
  ASSERT_TRUE(table.ok()) << table.status();
  for (BufferId b = 0; b < 8; ++b) ASSERT_TRUE(table->Pin(b * 11).ok());
  EXPECT_EQ(table->OverflowEntries(), 0u);
  EXPECT_EQ(table->HeldCount(), 8u);
  // While pins only grow, the 8 inline entries stay full and the rest overflow.
  for (BufferId b = 8; b < 100; ++b) {
    ASSERT_TRUE(table->Pin(b * 11 % kTableBuffers).ok());
    ASSERT_EQ(table->HeldCount(), b + 1);
    ASSERT_EQ(table->OverflowEntries(), b + 1 - 8);
  }
  for (BufferId b = 0; b < 100; ++b) EXPECT_EQ(CountOrMinusOne(*table, b * 11 % kTableBuffers), 1);
  for (BufferId b = 0; b < 100; ++b) ASSERT_TRUE(table->Unpin(b * 11 % kTableBuffers).ok());
  EXPECT_EQ(table->HeldCount(), 0u);
  EXPECT_EQ(table->OverflowEntries(), 0u);
  EXPECT_TRUE(table->FindLeaks(ScanKernel::kNaive).empty());
}

// A pin of a buffer in the overflow map moves it back inline with its count.
// Whichever buffer overflowed, once an inline entry is free and every held
// buffer has been pinned again, the map must be empty and every count one up.
TEST(HashRefCountTest, PinOfAnOverflowedBufferMovesItBackInline) {
  constexpr BufferId kBuffers[] = {2, 30, 31, 77, 100, 256, 513, 900, 999};
  for (BufferId dropped : kBuffers) {
    SCOPED_TRACE(dropped);
    absl::StatusOr<HashRefCount> table = HashRefCount::Create(kTableBuffers);
    ASSERT_TRUE(table.ok()) << table.status();
    std::vector<Leak> held;
    for (size_t i = 0; i < std::size(kBuffers); ++i) {
      const int32_t count = static_cast<int32_t>(std::size(kBuffers) - i) * 37;  // distinct, some past 255
      ASSERT_TRUE(PinTimes(*table, kBuffers[i], count));
      held.push_back({kBuffers[i], count});
    }
    ASSERT_EQ(table->OverflowEntries(), 1u);
    ASSERT_EQ(table->HeldCount(), 9u);

    // Drop one buffer entirely.
    const size_t dropped_index = std::find(std::begin(kBuffers), std::end(kBuffers), dropped) - std::begin(kBuffers);
    for (int32_t i = 0; i < held[dropped_index].count; ++i) ASSERT_TRUE(table->Unpin(dropped).ok());
    held.erase(held.begin() + static_cast<std::ptrdiff_t>(dropped_index));
    EXPECT_EQ(table->HeldCount(), 8u);
    // Either it was the overflowed one, or the map still holds one buffer.
    EXPECT_LE(table->OverflowEntries(), 1u);

    for (Leak& leak : held) {
      ASSERT_TRUE(table->Pin(leak.buffer).ok());
      ++leak.count;
      EXPECT_EQ(CountOrMinusOne(*table, leak.buffer), leak.count);
    }
    EXPECT_EQ(table->OverflowEntries(), 0u);
    EXPECT_EQ(table->HeldCount(), 8u);
    EXPECT_EQ(table->FindLeaks(ScanKernel::kNaive), held);
  }
}

TEST(HashRefCountTest, MemoryDoesNotDependOnNBuffers) {
  absl::StatusOr<HashRefCount> small = HashRefCount::Create(16);
  absl::StatusOr<HashRefCount> large = HashRefCount::Create(1u << 20);
  absl::StatusOr<HashRefCount> largest = HashRefCount::Create(kMaxNBuffers);
  ASSERT_TRUE(small.ok() && large.ok() && largest.ok());
  EXPECT_EQ(small->MemoryBytes(), large->MemoryBytes());
  EXPECT_EQ(small->MemoryBytes(), largest->MemoryBytes());
  EXPECT_LE(small->MemoryBytes(), 1024u);
  // The top of the largest table is usable, one above is not.
  EXPECT_TRUE(largest->Pin(kMaxNBuffers - 1).ok());
  EXPECT_EQ(CountOrMinusOne(*largest, kMaxNBuffers - 1), 1);
  EXPECT_TRUE(absl::IsOutOfRange(largest->Pin(kMaxNBuffers)));
}

TEST(ArrayRefCountTest, MemoryIsFourBytesPerBuffer) {
  constexpr uint32_t kBig = 1u << 20;
  absl::StatusOr<ArrayRefCount> table = ArrayRefCount::Create(kBig);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_GE(table->MemoryBytes(), size_t{4} * kBig);
  EXPECT_LE(table->MemoryBytes(), size_t{4} * kBig + 1024);
}

TEST(ByteRefCountTest, MemoryIsOneBytePerBufferWhenNothingOverflows) {
  constexpr uint32_t kBig = 1u << 20;
  absl::StatusOr<ByteRefCount> table = ByteRefCount::Create(kBig);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_GE(table->MemoryBytes(), size_t{kBig});
  EXPECT_LE(table->MemoryBytes(), size_t{kBig} + 1024);
  // An overflowed count costs map memory on top.
  const size_t before = table->MemoryBytes();
  ASSERT_TRUE(PinTimes(*table, 1, 300));
  EXPECT_GT(table->MemoryBytes(), before);
}

TEST(LayoutNamesTest, ParseLayoutRoundTripsAndRejectsUnknownNames) {
  for (Layout layout : kAllLayouts) {
    absl::StatusOr<Layout> parsed = ParseLayout(LayoutName(layout));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, layout);
  }
  EXPECT_EQ(LayoutName(Layout::kArray), "array");
  EXPECT_EQ(LayoutName(Layout::kBytes), "bytes");
  EXPECT_EQ(LayoutName(Layout::kHash), "hash");
  EXPECT_EQ(LayoutName(Layout::kHashKeys), "hash-keys");
  EXPECT_EQ(LayoutName(Layout::kArrayTouched), "array-touched");
  for (const char* bad : {"foo", "", "arrays", " array"}) {
    absl::StatusOr<Layout> parsed = ParseLayout(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad;
    if (*bad != '\0') {
      EXPECT_NE(std::string(parsed.status().message()).find(bad), std::string::npos);
    }
  }
}

TEST(LayoutNamesTest, ValidateNBuffersAcceptsOneToTheLimit) {
  EXPECT_TRUE(ValidateNBuffers(1).ok());
  EXPECT_TRUE(ValidateNBuffers(kMaxNBuffers).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateNBuffers(0)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateNBuffers(uint64_t{kMaxNBuffers} + 1)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateNBuffers(std::numeric_limits<uint64_t>::max())));
}

}  // namespace
}  // namespace backendlab::buffers

namespace backendlab::buffers {
namespace {

using ::backendlab::test_util::kAddressSanitizer;

// `array-touched` reads only the memory pages its pins wrote: at 8GB (2^20
// buffers, 4 MB of counts) three pins in three pages leave three pages to
// scan, and the exit check faults in none of the others. Page faults are the
// kernel's exact count: a page never touched faults when first read.
TEST(ArrayTouchedTest, TheExitCheckReadsOnlyThePagesPinsWrote) {
  constexpr uint32_t kEightGB = uint32_t{1} << 20;
  absl::StatusOr<ArrayTouchedRefCount> table = ArrayTouchedRefCount::Create(kEightGB);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->TouchedPages(), 0u);
  const std::vector<Leak> planted = {{0, 1}, {1023, 2}, {1024, 1}, {500'000, 3}, {kEightGB - 1, 1}};
  for (const Leak& leak : planted) ASSERT_TRUE(test_util::PinTimes(*table, leak.buffer, leak.count));
  // 0, 1023 and 1024 lie in one or two memory pages (the table need not start
  // on a page boundary); 500000 and the last in one each.
  EXPECT_GE(table->TouchedPages(), 4u);
  EXPECT_LE(table->TouchedPages(), 5u);
  for (ScanKernel kernel : kAllScanKernels) EXPECT_EQ(table->FindLeaks(kernel), planted) << ScanKernelName(kernel);
  // Again, counting faults: the heap the leak lists use is warm now, so a
  // fault could only be a page of the table read for the first time.
  std::vector<std::vector<Leak>> found;
  found.reserve(std::size(kAllScanKernels));
  const ResourceSample before = SampleSelf();
  for (ScanKernel kernel : kAllScanKernels) found.push_back(table->FindLeaks(kernel));
  const ResourceSample after = SampleSelf();
  // Under AddressSanitizer the leak lists' allocations come from fresh pages
  // (its quarantine keeps freed memory from reuse), so faults there are not
  // the table's; the count is exact in the other builds.
  if (!kAddressSanitizer) {
    EXPECT_EQ(after.minor_faults - before.minor_faults, 0) << "the exit check read a page no pin wrote";
  }
  for (const std::vector<Leak>& leaks : found) EXPECT_EQ(leaks, planted);
  table->ReleaseAll();
  EXPECT_EQ(table->TouchedPages(), 0u);
  EXPECT_EQ(table->HeldCount(), 0u);
}

}  // namespace
}  // namespace backendlab::buffers
