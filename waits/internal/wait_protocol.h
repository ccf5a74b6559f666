// PostgreSQL's WaitEventSetWait around one blocking call, shared by every
// wait that holds a latch in a set (the epoll latches' own waits and the four
// wait strategies): the latch checked before any system call, the
// maybe_sleeping handshake, and the timeout recomputed after an empty
// wake-up.
#ifndef BACKENDLAB_WAITS_INTERNAL_WAIT_PROTOCOL_H_
#define BACKENDLAB_WAITS_INTERNAL_WAIT_PROTOCOL_H_

#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "base/resource_usage.h"
#include "waits/latch.h"
#include "waits/postmaster_death.h"

namespace backendlab::waits::internal {

// What a blocking call returns: the events that occurred (possibly none: a
// signal, a stale latch wake-up, a false postmaster-death alarm), or
// kTimedOut.
inline constexpr int64_t kTimedOut = -1;

// Waits until the latch is set, `block` reports an event, or timeout_ms
// passes (< 0: for ever). `block(timeout_ms)` makes one blocking call. As
// PostgreSQL's (waiteventset.c), for one event returned at a time:
//   1. the clock is read only when there is a timeout;
//   2. a set latch returns at once, with no system call;
//   3. otherwise maybe_sleeping is set and the latch rechecked before the
//      block, and cleared after it (SetLatch wakes only a maybe-sleeping
//      owner);
//   4. an empty wake-up recomputes what is left of the timeout and waits again.
template <WaitSetLatch L, typename Block>
uint32_t WaitEventSetWait(L& latch, int64_t timeout_ms, Block block) {
  const int64_t start_ns = timeout_ms >= 0 ? NowNs() : 0;
  int cur_timeout = timeout_ms >= 0 ? static_cast<int>(std::min<int64_t>(timeout_ms, INT_MAX)) : -1;
  latch.SetWaiting(true);
  uint32_t returned = 0;
  while (returned == 0) {
    if (!latch.IsSet()) latch.PrepareToSleep();
    if (latch.IsSet()) {
      latch.FinishSleep();
      returned = kLatchSet;
      break;
    }
    const int64_t rc = block(cur_timeout);
    latch.FinishSleep();
    if (rc == kTimedOut) {
      returned = kTimeout;
      break;
    }
    returned = static_cast<uint32_t>(rc);
    if (returned == 0 && timeout_ms >= 0) {
      const int64_t left = timeout_ms - (NowNs() - start_ns) / 1'000'000;
      if (left <= 0) {
        returned = kTimeout;
        break;
      }
      cur_timeout = static_cast<int>(std::min<int64_t>(left, INT_MAX));
    }
  }
  latch.SetWaiting(false);
  return returned;
}

// What each member of a set stands for: how a ready descriptor is read.
enum class Member : uint32_t { kLatch, kPostmasterDeath, kSocket };

// The WaitEvent bits of a ready member. The latch's descriptor is drained
// and counts only if the latch is set (a stale wake-up counts nothing, as
// PostgreSQL's); postmaster death only if the pipe confirms it (a false
// alarm counts nothing); a socket's error or hang-up makes it both readable
// and writable, so that the caller's read or write finds out.
template <WaitSetLatch L>
uint32_t MemberEvents(L& latch, Member member, int fd, bool readable, bool writable, bool error,
                      uint32_t socket_events) {
  switch (member) {
    case Member::kLatch:
      latch.Drain();
      return latch.IsSet() ? uint32_t{kLatchSet} : 0u;
    case Member::kPostmasterDeath:
      return PostmasterAliveOn(fd) ? 0u : uint32_t{kPostmasterDeath};
    case Member::kSocket:
      return socket_events & (((readable || error) ? uint32_t{kSocketReadable} : 0u) |
                              ((writable || error) ? uint32_t{kSocketWritable} : 0u));
  }
  return 0;
}

// epoll's bits for a member: PostgreSQL's, level-triggered, EPOLLERR and
// EPOLLHUP always.
inline uint32_t EpollBits(Member member, uint32_t socket_events) {
  if (member != Member::kSocket) return EPOLLIN | EPOLLERR | EPOLLHUP;
  return EPOLLERR | EPOLLHUP | ((socket_events & kSocketReadable) ? EPOLLIN : 0u) |
         ((socket_events & kSocketWritable) ? EPOLLOUT : 0u);
}

inline short PollBits(Member member, uint32_t socket_events) {
  if (member != Member::kSocket) return POLLIN;
  return static_cast<short>(((socket_events & kSocketReadable) ? POLLIN : 0) |
                            ((socket_events & kSocketWritable) ? POLLOUT : 0));
}

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_WAIT_PROTOCOL_H_
