// `signalfd-epoll`: PostgreSQL >= 14 on Linux. SetLatch wakes a sleeping
// owner with kill(SIGURG), and only a sleeping one (maybe_sleeping); the
// owner keeps SIGURG blocked and a signalfd for it in its epoll sets, so
// the signal arrives as a readable descriptor, with no handler and no
// self-pipe. WaitLatch uses a long-lived set (LatchWaitSet: the latch and
// postmaster death); WaitLatchOrSocket a fresh set per call, as PostgreSQL's
// does to this day.
#ifndef BACKENDLAB_WAITS_SIGNALFD_EPOLL_LATCH_H_
#define BACKENDLAB_WAITS_SIGNALFD_EPOLL_LATCH_H_

#include <signal.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/unique_fd.h"
#include "waits/internal/epoll_latch.h"
#include "waits/latch.h"

namespace backendlab::waits {

class SignalfdEpollLatch : public internal::EpollLatch<SignalfdEpollLatch> {
 public:
  struct Shared {
    LatchState state;
  };
  static constexpr LatchKind kKind = LatchKind::kSignalfdEpoll;
  static constexpr bool kWaitsOnSocket = true;
  static constexpr bool kWatchesPostmasterDeath = true;

  static absl::Status InitShared(Shared& shared);
  static void DestroyShared(Shared&) noexcept {}
  // Blocks SIGURG in the calling thread (PostgreSQL adds it to the mask it
  // runs with), makes the signalfd and the LatchWaitSet: sigprocmask,
  // signalfd, epoll_create1 and one or two epoll_ctl. FailedPrecondition if
  // this process already owns one (one signalfd per process).
  static absl::StatusOr<SignalfdEpollLatch> Own(Shared& shared, int death_fd);
  // Async-signal-safe: atomics, and kill() only for a maybe-sleeping owner.
  static void Set(Shared& shared) noexcept;

  SignalfdEpollLatch(SignalfdEpollLatch&& other) noexcept;
  SignalfdEpollLatch& operator=(SignalfdEpollLatch&& other) noexcept;
  // Disowns the latch, closes the descriptors and restores the signal mask.
  ~SignalfdEpollLatch();

  int fd() const { return signal_fd_.get(); }
  // PostgreSQL's drain(): read the signalfd into a 1 kB buffer until EAGAIN
  // or a short read (one read() for the one pending SIGURG there can be).
  void Drain() noexcept;
  void SetWaiting(bool waiting) noexcept;

 private:
  SignalfdEpollLatch() = default;
  void Disown() noexcept;

  UniqueFd signal_fd_;
  bool mask_saved_ = false;
  sigset_t old_mask_{};
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_SIGNALFD_EPOLL_LATCH_H_
