// `selfpipe-select`: the 2010 self-pipe latch sleeping in select().
#include "waits/selfpipe_select_latch.h"

#include <sys/select.h>

#include <algorithm>
#include <cerrno>

#include "base/check.h"


namespace backendlab::waits {

int64_t SelfpipeSelectLatch::Block(int pipe_fd, int socket, uint32_t events, internal::SleepTimeout& timeout) {
  if (timeout.timeout_ms >= 0 && !timeout.tv_made) {
    // 2010's: made once per wait; Linux's select() leaves the time not slept
    // in it, so passing it again after a wake-up honours the timeout.
    timeout.tv.tv_sec = timeout.timeout_ms / 1000;
    timeout.tv.tv_usec = (timeout.timeout_ms % 1000) * 1000;
    timeout.tv_made = true;
  }
  // select() cannot name a descriptor at or past FD_SETSIZE: 2010's limit too.
  BACKENDLAB_CHECK(pipe_fd < FD_SETSIZE && socket < FD_SETSIZE);
  fd_set readable, writable;
  FD_ZERO(&readable);
  FD_ZERO(&writable);
  FD_SET(pipe_fd, &readable);
  const bool read_socket = socket >= 0 && (events & kSocketReadable);
  const bool write_socket = socket >= 0 && (events & kSocketWritable);
  if (read_socket) FD_SET(socket, &readable);
  if (write_socket) FD_SET(socket, &writable);
  const int nfds = std::max(pipe_fd, socket) + 1;
  const int rc = select(nfds, &readable, write_socket ? &writable : nullptr, nullptr,
                        timeout.timeout_ms >= 0 ? &timeout.tv : nullptr);
  if (rc < 0) return errno == EINTR ? internal::kInterrupted : -3;
  if (rc == 0) return internal::kTimedOut;
  int64_t result = 0;
  if (read_socket && FD_ISSET(socket, &readable)) result |= kSocketReadable;
  if (write_socket && FD_ISSET(socket, &writable)) result |= kSocketWritable;
  return result;
}

}  // namespace backendlab::waits
