// A private temporary directory for one test, removed with everything in it.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_TEMP_DIR_H_
#define BACKENDLAB_TESTS_TEST_UTIL_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <optional>
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

// Sets an environment variable for one scope and restores (or unsets) it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A TempDirTest whose TMPDIR is tmpdir_, a fresh directory inside dir_: what
// a run leaves behind (a socket directory, a sample file) is seen there, and
// parallel tests never share one. dir_ itself is free for the test's files.
class PrivateTmpdirTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    tmpdir_ = dir_ + "/tmp";
    ASSERT_TRUE(std::filesystem::create_directory(tmpdir_));
    tmpdir_env_.emplace("TMPDIR", tmpdir_);
  }
  void TearDown() override {
    tmpdir_env_.reset();
    TempDirTest::TearDown();
  }

  bool TmpdirIsEmpty() const { return std::filesystem::is_empty(tmpdir_); }

  std::string tmpdir_;
  std::optional<ScopedEnv> tmpdir_env_;
};

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_TEMP_DIR_H_
