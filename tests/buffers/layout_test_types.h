// The refcount layouts as a GoogleTest type list, with helpers for typed tests.
#ifndef BACKENDLAB_TESTS_BUFFERS_LAYOUT_TEST_TYPES_H_
#define BACKENDLAB_TESTS_BUFFERS_LAYOUT_TEST_TYPES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "buffers/array_refcount.h"
#include "buffers/array_touched_refcount.h"
#include "buffers/byte_refcount.h"
#include "buffers/hash_keys_refcount.h"
#include "buffers/hash_refcount.h"
#include "buffers/refcount_table.h"
#include "gtest/gtest.h"

// Not `testing`: inside backendlab::buffers that name would hide ::testing.
namespace backendlab::buffers::test_util {

using AllLayoutTypes =
    ::testing::Types<ArrayRefCount, ByteRefCount, HashRefCount, HashKeysRefCount, ArrayTouchedRefCount>;

// Typed-test names read "array", "bytes", "hash", "hash-keys", "array-touched", as everywhere else.
struct LayoutTypeName {
  template <typename T>
  static std::string GetName(int) {
    std::string name(LayoutName(T::kLayout));
    std::replace(name.begin(), name.end(), '-', '_');  // a test name takes no '-'
    return name;
  }
};

// Entries in the layout's overflow map; `array` has none.
template <RefCountTable T>
size_t OverflowEntriesOf(const T& table) {
  if constexpr (requires { table.OverflowEntries(); }) {
    return table.OverflowEntries();
  } else {
    return 0;
  }
}

// Pins `buffer` `times` times; every pin must succeed.
template <RefCountTable T>
::testing::AssertionResult PinTimes(T& table, BufferId buffer, int64_t times) {
  for (int64_t i = 0; i < times; ++i) {
    if (absl::Status s = table.Pin(buffer); !s.ok()) {
      return ::testing::AssertionFailure() << "pin " << i + 1 << " of buffer " << buffer << ": " << s;
    }
  }
  return ::testing::AssertionSuccess();
}

// Count(buffer), with -1 standing for a non-OK status so it compares in one assertion.
template <RefCountTable T>
int64_t CountOrMinusOne(const T& table, BufferId buffer) {
  absl::StatusOr<int32_t> count = table.Count(buffer);
  return count.ok() ? *count : -1;
}

}  // namespace backendlab::buffers::test_util

#endif  // BACKENDLAB_TESTS_BUFFERS_LAYOUT_TEST_TYPES_H_
