// `eventfd-epoll`: maybe_sleeping, and an eventfd for the wake-up.
#include "waits/eventfd_epoll_latch.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "waits/internal/my_pid.h"

namespace backendlab::waits {

absl::Status EventfdEpollLatch::InitShared(Shared& shared) {
  new (&shared) Shared();
  shared.eventfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (shared.eventfd < 0) return absl::UnavailableError(absl::StrCat("eventfd: ", std::strerror(errno)));
  return absl::OkStatus();
}

void EventfdEpollLatch::DestroyShared(Shared& shared) noexcept {
  if (shared.eventfd >= 0) close(shared.eventfd);
  shared.eventfd = -1;
}

absl::StatusOr<EventfdEpollLatch> EventfdEpollLatch::Own(Shared& shared, int death_fd) {
  EventfdEpollLatch latch;
  latch.state_ = &shared.state;
  latch.eventfd_ = shared.eventfd;
  if (absl::Status s = latch.OpenWaitSet(shared.eventfd, death_fd); !s.ok()) return s;
  shared.state.owner_pid.store(internal::MyProcPid(), std::memory_order_release);
  return latch;
}

EventfdEpollLatch& EventfdEpollLatch::operator=(EventfdEpollLatch&& other) noexcept {
  if (this != &other) {
    Disown();
    EpollLatch::operator=(std::move(other));
    eventfd_ = other.eventfd_;
  }
  return *this;
}

EventfdEpollLatch::~EventfdEpollLatch() { Disown(); }

void EventfdEpollLatch::Disown() noexcept {
  if (state_ == nullptr) return;
  state_->owner_pid.store(0, std::memory_order_release);
  wait_set_.Close();
  state_ = nullptr;
}

void EventfdEpollLatch::Set(Shared& shared) noexcept {
  if (!internal::SetAndNeedsWakeup(shared.state)) return;
  if (shared.state.owner_pid.load(std::memory_order_relaxed) == 0) return;
  const uint64_t one = 1;
  // EAGAIN (the counter at its maximum) cannot happen: every wake-up adds 1
  // and the owner's drain zeroes it. Any error leaves a set latch that the
  // owner finds at its next check, as PostgreSQL ignores sendSelfPipeByte's.
  ssize_t n;
  do {
    n = write(shared.eventfd, &one, sizeof one);
  } while (n < 0 && errno == EINTR);
}

void EventfdEpollLatch::Drain() noexcept {
  uint64_t count;
  ssize_t n;
  do {
    n = read(eventfd_, &count, sizeof count);
  } while (n < 0 && errno == EINTR);
}

}  // namespace backendlab::waits
