// Fresh tables whatever the history: a flat table's pages are untouched
// zero pages, so its exit scan faults every page exactly once, even after
// this process wrote and freed large blocks that glibc keeps in its heap
// and would have handed to calloc, already faulted in, to be memset.
#include <optional>
#include <vector>

#include "buffers/array_refcount.h"
#include "buffers/byte_refcount.h"
#include "gtest/gtest.h"
#include "tests/test_util/page_faults.h"
#include "tests/test_util/skip.h"

namespace backendlab::buffers {
namespace {

using ::backendlab::test_util::Lack;
using ::backendlab::test_util::MinorFaults;
using ::backendlab::test_util::PolluteTheHeap;
using ::backendlab::test_util::WhyPagesAreNotCountable;

// The faults of one exit scan of a fresh table of `nbuffers`.
template <typename Table>
int64_t ScanFaults(uint32_t nbuffers) {
  absl::StatusOr<Table> table = Table::Create(nbuffers);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return -1;
  const int64_t before = MinorFaults();
  const std::vector<Leak> leaks = table->FindLeaks(ScanKernel::kSimd);
  const int64_t faults = MinorFaults() - before;
  EXPECT_TRUE(leaks.empty());
  return faults;
}

TEST(FreshTableTest, AFlatTableFaultsEachOfItsPagesOnceWhateverTheHeapHeld) {
  if (const std::optional<Lack> lack = WhyPagesAreNotCountable()) BACKENDLAB_SKIP(lack->need) << lack->why;
  constexpr uint32_t kBuffers = 1 << 20;  // 8GB of shared_buffers
  constexpr int64_t kArrayPages = kBuffers * sizeof(int32_t) / 4096, kBytePages = kBuffers / 4096;
  EXPECT_EQ(ScanFaults<ArrayRefCount>(kBuffers), kArrayPages) << "before the heap held anything";
  EXPECT_EQ(ScanFaults<ByteRefCount>(kBuffers), kBytePages);
  ASSERT_TRUE(PolluteTheHeap());
  EXPECT_EQ(ScanFaults<ArrayRefCount>(kBuffers), kArrayPages) << "after large blocks were written and freed";
  EXPECT_EQ(ScanFaults<ByteRefCount>(kBuffers), kBytePages);
  // And the small table of 128MB (64 kB: below glibc's threshold, from the
  // heap it would have been).
  EXPECT_EQ(ScanFaults<ArrayRefCount>(16384), 16);
}

}  // namespace
}  // namespace backendlab::buffers
