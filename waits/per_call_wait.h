// `per-call`: a set created and freed on every wait, as WaitLatchOrSocket
// does to this day (PostgreSQL 18 included): epoll_create1, an epoll_ctl
// for the latch, postmaster death and the socket, epoll_wait, close — 6
// system calls, 5 when the latch is already set. The 2018 WaitLatchOrSocket
// thread: 38k TPS through postgres_fdw on 72 cores, 62.6 % of the CPU in
// close().
#ifndef BACKENDLAB_WAITS_PER_CALL_WAIT_H_
#define BACKENDLAB_WAITS_PER_CALL_WAIT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "waits/internal/epoll_set.h"
#include "waits/latch.h"
#include "waits/wait_set.h"

namespace backendlab::waits {

template <WaitSetLatch L>
class PerCallWait {
 public:
  static constexpr WaitStrategy kStrategy = WaitStrategy::kPerCall;

  static absl::StatusOr<PerCallWait> Create(L& latch, int death_fd, int /*socket*/) {
    return PerCallWait(latch, death_fd);
  }

  uint32_t WaitOrSocket(int socket, uint32_t events, int64_t timeout_ms) {
    ++waits_;
    return internal::WaitOnFreshEpollSet(*latch_, death_fd_, socket, events, timeout_ms, &close_ns_);
  }
  Received Receive(int socket, char* buf, size_t len) {
    return internal::ReceiveWaiting(*this, *latch_, socket, buf, len, /*read_first=*/false);
  }
  int64_t waits() const { return waits_; }
  int64_t close_ns() const { return close_ns_; }

 private:
  PerCallWait(L& latch, int death_fd) : latch_(&latch), death_fd_(death_fd) {}

  L* latch_;
  int death_fd_;
  int64_t waits_ = 0;
  int64_t close_ns_ = 0;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_PER_CALL_WAIT_H_
