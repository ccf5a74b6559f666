// For the tests that change vm.nr_hugepages (the huge-pages what-if): one at
// a time across parallel test processes, the value put back after each, and
// a /run of the test's own so that a state file it plants or leaves is seen
// by no other test and by nothing on the host.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_HOST_HUGE_PAGES_H_
#define BACKENDLAB_TESTS_TEST_UTIL_HOST_HUGE_PAGES_H_

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/test_util/skip.h"

namespace backendlab::test_util {

inline constexpr char kNrHugePagesPath[] = "/proc/sys/vm/nr_hugepages";

// vm.nr_hugepages, -1 if it cannot be read.
inline int64_t HostNrHugePages() {
  std::ifstream in(kNrHugePagesPath);
  int64_t n = -1;
  return in >> n ? n : -1;
}

inline bool SetHostNrHugePages(int64_t n) {
  std::ofstream out(kNrHugePagesPath);
  out << n << "\n";
  out.flush();
  return static_cast<bool>(out);
}

// Held for a test's life: an exclusive lock on vm.nr_hugepages itself (flock
// on its /proc file, so nothing is left behind), taken by every test that
// changes it; the value it found is written back when it goes, whatever
// the test left.
class HostHugePagesLock {
 public:
  HostHugePagesLock() : fd_(open(kNrHugePagesPath, O_RDONLY | O_CLOEXEC)) {
    if (fd_ >= 0) {
      while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
    before_ = HostNrHugePages();
  }
  ~HostHugePagesLock() {
    if (before_ >= 0 && HostNrHugePages() != before_) SetHostNrHugePages(before_);
    if (fd_ >= 0) close(fd_);
  }
  HostHugePagesLock(const HostHugePagesLock&) = delete;
  HostHugePagesLock& operator=(const HostHugePagesLock&) = delete;

  int64_t before() const { return before_; }

 private:
  int fd_;
  int64_t before_ = -1;
};

// Gives this thread, and every process it starts from now on, a mount
// namespace of its own with an empty tmpfs on /run (the host's /run is not
// touched; the namespace goes with the last of them). "" on success, else
// why not (it needs root: CAP_SYS_ADMIN).
inline std::string UsePrivateRun() {
  if (unshare(CLONE_NEWNS) != 0) return absl::StrCat("unshare(CLONE_NEWNS): ", std::strerror(errno));
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return absl::StrCat("making / private: ", std::strerror(errno));
  }
  if (mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") != 0) return absl::StrCat("tmpfs on /run: ", std::strerror(errno));
  return "";
}

// For a test that changes vm.nr_hugepages, at its start: what it needs and
// this machine lacks, in tools/test's words after "needs " (skip.h), or ""
// when it can run, and then it has a /run of its own (UsePrivateRun).
inline std::string WhatHostHugePagesTestsNeed() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  bool huge_pages = false;
  while (!huge_pages && std::getline(meminfo, line)) huge_pages = line.rfind("Hugepagesize:", 0) == 0;
  if (!huge_pages) return "huge pages: the kernel has none (no Hugepagesize in /proc/meminfo)";
  // absl::StrCat, not std::string's +: GCC 12 warns falsely (stringop-overread) on the latter here.
  if (geteuid() != 0) return absl::StrCat(kNeedsRoot, ": to grow vm.nr_hugepages");
  if (const std::string why = UsePrivateRun(); !why.empty()) return absl::StrCat(kNeedsRoot, ": a /run of the test's own: ", why);
  return "";
}

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_HOST_HUGE_PAGES_H_
