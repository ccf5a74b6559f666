// `selfpipe-poll`: the 2010 self-pipe latch sleeping in poll().
#include "waits/selfpipe_poll_latch.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "base/resource_usage.h"

namespace backendlab::waits {

int64_t SelfpipePollLatch::Block(int pipe_fd, int socket, uint32_t events, internal::SleepTimeout& timeout) {
  int timeout_ms = -1;
  if (timeout.timeout_ms >= 0) {
    const int64_t left = timeout.timeout_ms - (NowNs() - timeout.start_ns) / 1'000'000;
    if (left <= 0) return internal::kTimedOut;
    timeout_ms = static_cast<int>(std::min<int64_t>(left, INT_MAX));
  }
  pollfd fds[2] = {{pipe_fd, POLLIN, 0}, {socket, internal::PollBits(internal::Member::kSocket, events), 0}};
  const nfds_t n = socket >= 0 ? 2 : 1;
  const int rc = poll(fds, n, timeout_ms);
  if (rc < 0) return errno == EINTR ? internal::kInterrupted : -3;
  if (rc == 0) return internal::kTimedOut;
  if (n < 2 || fds[1].revents == 0) return 0;
  const bool error = (fds[1].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
  int64_t result = 0;
  if ((events & kSocketReadable) && (error || (fds[1].revents & POLLIN))) result |= kSocketReadable;
  if ((events & kSocketWritable) && (error || (fds[1].revents & POLLOUT))) result |= kSocketWritable;
  return result;
}

}  // namespace backendlab::waits
