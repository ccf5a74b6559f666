// Counting a process's minor page faults exactly, for tests that assert how
// many pages a fresh structure faults: the count, a heap left full of
// resident pages that malloc would hand out again, and what a machine lacks
// for the count to be exact.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_PAGE_FAULTS_H_
#define BACKENDLAB_TESTS_TEST_UTIL_PAGE_FAULTS_H_

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "tests/test_util/sanitizers.h"

namespace backendlab::test_util {

inline int64_t MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// A freed 64 MB block (an mmap of its own) raises glibc's mmap threshold to
// 64 MB; the 16 MB block after it then comes from the heap, is written, and
// stays there once freed (the trim threshold rose too): the heap the
// postmaster's or a test's earlier allocations leave behind. Returns false if
// malloc failed.
inline bool PolluteTheHeap() {
  for (const size_t bytes : {size_t{64} << 20, size_t{16} << 20}) {
    void* block = std::malloc(bytes);
    if (block == nullptr) return false;
    std::memset(block, 1, bytes);
    std::free(block);
  }
  return true;
}

// What this machine lacks for page counts to be exact, and why: a build
// without ASan's shadow (each checked access also reads a shadow byte, which
// faults shadow pages beside the structure's) and transparent huge pages not
// `always` (a fault may then map 2 MB at once).
struct Lack {
  const char* need = nullptr;
  std::string why;
};
inline std::optional<Lack> WhyPagesAreNotCountable() {
  if (kAddressSanitizer) {
    return Lack{"a build without AddressSanitizer", "its shadow memory faults beside the structure's pages"};
  }
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  if (mode.find("[always]") != std::string::npos) {
    return Lack{"transparent huge pages not `always`", "a fault may then map 2 MB at once; this kernel has " + mode};
  }
  return std::nullopt;
}

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_PAGE_FAULTS_H_
