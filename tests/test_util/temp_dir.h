// A private temporary directory for one test, removed with everything in it.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_TEMP_DIR_H_
#define BACKENDLAB_TESTS_TEST_UTIL_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace backendlab::test_util {

// A fixture whose tests each get dir_, a fresh mkdtemp directory under
// GoogleTest's TempDir(), gone after the test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "backendlab_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string dir_;
};

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_TEMP_DIR_H_
