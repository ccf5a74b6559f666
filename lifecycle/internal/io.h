// Whole-buffer reads and writes on descriptors, retried on EINTR (a profiled
// process takes SIGPROF at any time). Not for other modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_IO_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_IO_H_

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace backendlab::lifecycle::internal {

// False on an error, or when the peer is gone.
inline bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The bytes read, fewer than n only at end of file or on an error (then -1
// if nothing was read and errno says why).
inline ssize_t ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return got > 0 ? static_cast<ssize_t>(got) : -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_IO_H_
