// `poll`: the other experiment of the 2018 WaitLatchOrSocket thread —
// WaitLatchOrSocket with poll() instead of a fresh epoll set (140k TPS
// against epoll's 38k): the pollfd array for the latch, postmaster death
// and the socket built on every call, one poll(). (PostgreSQL's own poll
// build, for systems without epoll or kqueue, prepares its array once per
// set; a fresh set per call, as WaitLatchOrSocket makes, fills it per call
// all the same.)
#ifndef BACKENDLAB_WAITS_POLL_WAIT_H_
#define BACKENDLAB_WAITS_POLL_WAIT_H_

#include <poll.h>

#include <cerrno>
#include <cstdint>

#include "absl/status/statusor.h"
#include "base/check.h"
#include "waits/internal/wait_protocol.h"
#include "waits/latch.h"
#include "waits/wait_set.h"

namespace backendlab::waits {

template <WaitSetLatch L>
class PollWait {
 public:
  static constexpr WaitStrategy kStrategy = WaitStrategy::kPoll;

  static absl::StatusOr<PollWait> Create(L& latch, int death_fd, int /*socket*/) { return PollWait(latch, death_fd); }

  uint32_t WaitOrSocket(int socket, uint32_t events, int64_t timeout_ms) {
    ++waits_;
    return internal::WaitEventSetWait(*latch_, timeout_ms, [&](int t) { return Block(socket, events, t); });
  }
  Received Receive(int socket, char* buf, size_t len) {
    return internal::ReceiveWaiting(*this, *latch_, socket, buf, len, /*read_first=*/false);
  }
  int64_t waits() const { return waits_; }
  int64_t close_ns() const { return 0; }

 private:
  PollWait(L& latch, int death_fd) : latch_(&latch), death_fd_(death_fd) {}

  // One poll(); the first ready member in the order they were added
  // (latch, postmaster death, socket) decides, as PostgreSQL's poll code
  // returns one event.
  int64_t Block(int socket, uint32_t events, int timeout_ms) {
    using internal::Member;
    pollfd fds[3];
    Member members[3];
    nfds_t n = 0;
    fds[n] = {latch_->fd(), internal::PollBits(Member::kLatch, 0), 0};
    members[n++] = Member::kLatch;
    if (death_fd_ >= 0) {
      fds[n] = {death_fd_, internal::PollBits(Member::kPostmasterDeath, 0), 0};
      members[n++] = Member::kPostmasterDeath;
    }
    if (socket >= 0) {
      fds[n] = {socket, internal::PollBits(Member::kSocket, events), 0};
      members[n++] = Member::kSocket;
    }
    const int rc = poll(fds, n, timeout_ms);
    if (rc < 0) {
      BACKENDLAB_CHECK(errno == EINTR);
      return 0;
    }
    if (rc == 0) return internal::kTimedOut;
    for (nfds_t i = 0; i < n; ++i) {
      const short r = fds[i].revents;
      if (r == 0) continue;
      const uint32_t got = internal::MemberEvents(*latch_, members[i], fds[i].fd, (r & POLLIN) != 0,
                                                  (r & POLLOUT) != 0, (r & (POLLERR | POLLHUP | POLLNVAL)) != 0, events);
      if (got != 0) return got;
    }
    return 0;
  }

  L* latch_;
  int death_fd_;
  int64_t waits_ = 0;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_POLL_WAIT_H_
