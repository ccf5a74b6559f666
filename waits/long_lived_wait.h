// `long-lived`: PostgreSQL's FeBeWaitSet (since 9.6) and LatchWaitSet
// (14): one set per backend, made once — the socket (first as writable, as
// pq_init adds it), the latch, postmaster death — and then, per wait,
// ModifyWaitEvent, which makes no system call when the events are those
// already set, and one epoll_wait. Its callers (secure_read) try the
// non-blocking read first and wait only when it finds nothing: 1 system
// call per wait, none when the data was already there.
#ifndef BACKENDLAB_WAITS_LONG_LIVED_WAIT_H_
#define BACKENDLAB_WAITS_LONG_LIVED_WAIT_H_

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "waits/internal/epoll_set.h"
#include "waits/internal/wait_protocol.h"
#include "waits/latch.h"
#include "waits/wait_set.h"

namespace backendlab::waits {

template <WaitSetLatch L>
class LongLivedWait {
 public:
  static constexpr WaitStrategy kStrategy = WaitStrategy::kLongLived;

  // pq_init's order: the socket (writable), the latch, postmaster death:
  // epoll_create1 and three epoll_ctl.
  static absl::StatusOr<LongLivedWait> Create(L& latch, int death_fd, int socket) {
    LongLivedWait w(latch, socket);
    w.set_ = internal::EpollSet::Create();
    if (!w.set_.valid()) return absl::UnavailableError(absl::StrCat("epoll_create1: ", std::strerror(errno)));
    int err = w.set_.Add(internal::Member::kSocket, socket, kSocketWritable);
    if (err == 0) err = w.set_.Add(internal::Member::kLatch, latch.fd());
    if (err == 0 && death_fd >= 0) err = w.set_.Add(internal::Member::kPostmasterDeath, death_fd);
    if (err != 0) return absl::UnavailableError(absl::StrCat("epoll_ctl: ", std::strerror(err)));
    return w;
  }

  LongLivedWait(LongLivedWait&&) noexcept = default;
  LongLivedWait& operator=(LongLivedWait&&) noexcept = default;

  uint32_t WaitOrSocket(int socket, uint32_t events, int64_t timeout_ms) {
    BACKENDLAB_CHECK(socket == socket_);  // the set's socket is fixed at Create
    ++waits_;
    if (const int err = set_.ModifySocket(socket, events); err != 0) {
      errno = err;
      return kWaitFailed;
    }
    return internal::WaitEventSetWait(*latch_, timeout_ms, [&](int t) { return set_.WaitBlock(*latch_, t); });
  }
  Received Receive(int socket, char* buf, size_t len) {
    return internal::ReceiveWaiting(*this, *latch_, socket, buf, len, /*read_first=*/true);
  }
  int64_t waits() const { return waits_; }
  int64_t close_ns() const { return 0; }  // closed once, at the backend's exit

 private:
  LongLivedWait(L& latch, int socket) : latch_(&latch), socket_(socket) {}

  L* latch_;
  int socket_;
  internal::EpollSet set_;
  int64_t waits_ = 0;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_LONG_LIVED_WAIT_H_
