// A full disk for one test: a small tmpfs mounted on a directory and filled,
// so that every write of a file's contents there fails with ENOSPC. Mounting
// needs root; it is unmounted when the object goes, whatever the test did.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_FULL_DISK_H_
#define BACKENDLAB_TESTS_TEST_UTIL_FULL_DISK_H_

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace backendlab::test_util {

class FullDisk {
 public:
  // The file that fills it; every other entry is the test's.
  static constexpr char kFiller[] = "filler";

  FullDisk() = default;
  FullDisk(const FullDisk&) = delete;
  FullDisk& operator=(const FullDisk&) = delete;
  // Declare it in the test's body, not in its fixture: it must be unmounted
  // before the fixture removes the directory it is mounted in.
  ~FullDisk() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
  }

  // Mounts a 64 kB tmpfs on `dir` (created) and fills it. "" once done; else
  // why not (the caller skips, naming it).
  std::string Mount(const std::string& dir) {
    dir_ = dir;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return "cannot create " + dir + ": " + ec.message();
    if (mount("backendlab-full", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") != 0) {
      return std::string("mount of a tmpfs refused: ") + std::strerror(errno);
    }
    mounted_ = true;
    const int fd = open((dir + "/" + kFiller).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return std::string("cannot create the filler: ") + std::strerror(errno);
    const std::vector<char> block(4096, 'x');
    int error = 0;
    while (error == 0) {
      if (write(fd, block.data(), block.size()) < 0) error = errno;
    }
    close(fd);
    return error == ENOSPC ? "" : std::string("filling it failed otherwise: ") + std::strerror(error);
  }

  // The files in it (at any depth) besides the filler: what a failed write
  // left. A directory an output was to go in is not counted.
  std::vector<std::string> Left() const {
    std::vector<std::string> left;
    for (const std::filesystem::directory_entry& e : std::filesystem::recursive_directory_iterator(dir_)) {
      if (!e.is_directory() && e.path().filename() != kFiller) left.push_back(e.path().string());
    }
    return left;
  }

 private:
  std::string dir_;
  bool mounted_ = false;
};

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_FULL_DISK_H_
