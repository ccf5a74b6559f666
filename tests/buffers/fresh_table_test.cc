// Fresh tables whatever the history: a flat table's pages are untouched
// zero pages, so its exit scan faults every page exactly once, even after
// this process wrote and freed large blocks that glibc keeps in its heap
// and would have handed to calloc, already faulted in, to be memset.
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "buffers/array_refcount.h"
#include "buffers/byte_refcount.h"
#include "gtest/gtest.h"
#include "tests/test_util/sanitizers.h"
#include "tests/test_util/skip.h"

namespace backendlab::buffers {
namespace {

using ::backendlab::test_util::kAddressSanitizer;

int64_t MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

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

// A freed 64 MB block (an mmap of its own) raises glibc's mmap threshold to
// 64 MB; the 16 MB block after it then comes from the heap, is written, and
// stays there once freed (the trim threshold rose too): the heap the
// postmaster's or a test's earlier allocations leave behind.
void PolluteTheHeap() {
  for (const size_t bytes : {size_t{64} << 20, size_t{16} << 20}) {
    void* block = std::malloc(bytes);
    ASSERT_NE(block, nullptr);
    std::memset(block, 1, bytes);
    std::free(block);
  }
}

TEST(FreshTableTest, AFlatTableFaultsEachOfItsPagesOnceWhateverTheHeapHeld) {
  if (kAddressSanitizer) {
    // Each checked load also reads the shadow byte of its 8 bytes: a scan
    // faults the table's pages and an eighth as many shadow pages more.
    BACKENDLAB_SKIP("a build without AddressSanitizer") << "its shadow memory faults beside the table's pages";
  }
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  if (mode.find("[always]") != std::string::npos) {
    // A read fault may then map a huge zero page: 2 MB at once.
    BACKENDLAB_SKIP("transparent huge pages not `always`") << "this kernel has " << mode;
  }
  constexpr uint32_t kBuffers = 1 << 20;  // 8GB of shared_buffers
  constexpr int64_t kArrayPages = kBuffers * sizeof(int32_t) / 4096, kBytePages = kBuffers / 4096;
  EXPECT_EQ(ScanFaults<ArrayRefCount>(kBuffers), kArrayPages) << "before the heap held anything";
  EXPECT_EQ(ScanFaults<ByteRefCount>(kBuffers), kBytePages);
  PolluteTheHeap();
  EXPECT_EQ(ScanFaults<ArrayRefCount>(kBuffers), kArrayPages) << "after large blocks were written and freed";
  EXPECT_EQ(ScanFaults<ByteRefCount>(kBuffers), kBytePages);
  // And the small table of 128MB (64 kB: below glibc's threshold, from the
  // heap it would have been).
  EXPECT_EQ(ScanFaults<ArrayRefCount>(16384), 16);
}

}  // namespace
}  // namespace backendlab::buffers
