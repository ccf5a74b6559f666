// `eventfd-epoll`: no PostgreSQL analogue, a floor to compare with. As
// `signalfd-epoll` (maybe_sleeping, a long-lived LatchWaitSet, a fresh set
// for WaitLatchOrSocket), but the wake-up is a write() to an eventfd the
// owner's sets watch: no signal at all. The catch, and why PostgreSQL could
// not do it: the eventfd must exist in every process that may set the
// latch, so it is made before they are forked (InitShared), and PostgreSQL's
// latches belong to processes started long after their setters.
#ifndef BACKENDLAB_WAITS_EVENTFD_EPOLL_LATCH_H_
#define BACKENDLAB_WAITS_EVENTFD_EPOLL_LATCH_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "waits/internal/epoll_latch.h"
#include "waits/latch.h"

namespace backendlab::waits {

class EventfdEpollLatch : public internal::EpollLatch<EventfdEpollLatch> {
 public:
  struct Shared {
    LatchState state;
    int eventfd = -1;  // the same number in every process forked after InitShared
  };
  static constexpr LatchKind kKind = LatchKind::kEventfdEpoll;
  static constexpr bool kWaitsOnSocket = true;
  static constexpr bool kWatchesPostmasterDeath = true;

  // eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), before any fork.
  static absl::Status InitShared(Shared& shared);
  static void DestroyShared(Shared& shared) noexcept;
  static absl::StatusOr<EventfdEpollLatch> Own(Shared& shared, int death_fd);
  // Async-signal-safe: atomics, and write() only for a maybe-sleeping owner.
  static void Set(Shared& shared) noexcept;

  EventfdEpollLatch(EventfdEpollLatch&& other) noexcept = default;
  EventfdEpollLatch& operator=(EventfdEpollLatch&& other) noexcept;
  ~EventfdEpollLatch();

  int fd() const { return eventfd_; }
  // One read() of the counter, which zeroes it.
  void Drain() noexcept;
  // An eventfd wakes its owner from any process, itself included: nothing to track.
  void SetWaiting(bool) noexcept {}

 private:
  EventfdEpollLatch() = default;
  void Disown() noexcept;

  int eventfd_ = -1;  // Shared's; not ours to close
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_EVENTFD_EPOLL_LATCH_H_
