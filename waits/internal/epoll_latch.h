// What the two epoll latches (signalfd-epoll, eventfd-epoll) share: the
// PostgreSQL >= 14 protocol on LatchState, the long-lived LatchWaitSet of
// WaitLatch, and WaitLatchOrSocket's fresh set. Each derived latch brings its
// descriptor (fd()), Drain() and SetWaiting().
#ifndef BACKENDLAB_WAITS_INTERNAL_EPOLL_LATCH_H_
#define BACKENDLAB_WAITS_INTERNAL_EPOLL_LATCH_H_

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "waits/internal/epoll_set.h"
#include "waits/internal/wait_protocol.h"
#include "waits/latch.h"

namespace backendlab::waits::internal {

// SetLatch's common part: true when the owner may be asleep and must be
// woken (PostgreSQL's order: barrier, is_set, barrier, maybe_sleeping).
inline bool SetAndNeedsWakeup(LatchState& s) noexcept {
  FullBarrier();
  if (s.is_set.load(std::memory_order_relaxed) != 0) return false;
  s.is_set.store(1, std::memory_order_relaxed);
  FullBarrier();
  return s.maybe_sleeping.load(std::memory_order_relaxed) != 0;
}

template <typename Derived>
class EpollLatch {
 public:
  void Reset() noexcept {
    state_->is_set.store(0, std::memory_order_relaxed);
    FullBarrier();
  }
  bool IsSet() const { return state_->is_set.load(std::memory_order_relaxed) != 0; }
  void PrepareToSleep() noexcept {
    state_->maybe_sleeping.store(1, std::memory_order_relaxed);
    FullBarrier();
  }
  void FinishSleep() noexcept { state_->maybe_sleeping.store(0, std::memory_order_relaxed); }

  // WaitLatch: the LatchWaitSet, one epoll_wait when the latch is not set.
  uint32_t Wait(int64_t timeout_ms) {
    Derived& self = static_cast<Derived&>(*this);
    return WaitEventSetWait(self, timeout_ms, [&](int t) { return wait_set_.WaitBlock(self, t); });
  }
  // WaitLatchOrSocket: a fresh set per call.
  uint32_t WaitOrSocket(int socket, uint32_t events, int64_t timeout_ms) {
    return WaitOnFreshEpollSet(static_cast<Derived&>(*this), death_fd_, socket, events, timeout_ms);
  }

 protected:
  EpollLatch() = default;
  EpollLatch(EpollLatch&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)), wait_set_(std::move(other.wait_set_)), death_fd_(other.death_fd_) {}
  EpollLatch& operator=(EpollLatch&& other) noexcept {
    state_ = std::exchange(other.state_, nullptr);
    wait_set_ = std::move(other.wait_set_);
    death_fd_ = other.death_fd_;
    return *this;
  }

  // InitializeLatchWaitSet: epoll_create1 and an epoll_ctl per member.
  absl::Status OpenWaitSet(int latch_fd, int death_fd) {
    death_fd_ = death_fd;
    wait_set_ = EpollSet::Create();
    if (!wait_set_.valid()) return absl::UnavailableError(absl::StrCat("epoll_create1: ", std::strerror(errno)));
    int err = wait_set_.Add(Member::kLatch, latch_fd);
    if (err == 0 && death_fd >= 0) err = wait_set_.Add(Member::kPostmasterDeath, death_fd);
    if (err != 0) return absl::UnavailableError(absl::StrCat("epoll_ctl: ", std::strerror(err)));
    return absl::OkStatus();
  }

  LatchState* state_ = nullptr;
  EpollSet wait_set_;
  int death_fd_ = -1;
};

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_EPOLL_LATCH_H_
