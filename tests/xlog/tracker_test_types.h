// The four trackers as a GoogleTest type list, named as everywhere else.
#ifndef BACKENDLAB_TESTS_XLOG_TRACKER_TEST_TYPES_H_
#define BACKENDLAB_TESTS_XLOG_TRACKER_TEST_TYPES_H_

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "xlog/tracker_dispatch.h"

namespace backendlab::xlog::test_util {

using AllTrackerTypes = ::testing::Types<PerLock, CentralSpinlock, CentralAtomic, PerLockAtomic>;
using PerLockTrackerTypes = ::testing::Types<PerLock, PerLockAtomic>;

// Typed-test names read "per_lock", "central_spinlock", ... (a test name takes no '-').
struct TrackerTypeName {
  template <typename T>
  static std::string GetName(int) {
    std::string name(T::kName);
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
  }
};

}  // namespace backendlab::xlog::test_util

#endif  // BACKENDLAB_TESTS_XLOG_TRACKER_TEST_TYPES_H_
