// `signalfd-epoll`: SIGURG blocked, a signalfd in the sets, maybe_sleeping.
#include "waits/signalfd_epoll_latch.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "waits/internal/my_pid.h"

namespace backendlab::waits {
namespace {

// Process-wide, as PostgreSQL's: one signalfd per process, and `waiting`
// for a SetLatch of our own latch from a signal handler.
std::atomic<bool> g_owned{false};
volatile sig_atomic_t g_waiting = 0;

}  // namespace

absl::Status SignalfdEpollLatch::InitShared(Shared& shared) {
  new (&shared) Shared();
  return absl::OkStatus();
}

absl::StatusOr<SignalfdEpollLatch> SignalfdEpollLatch::Own(Shared& shared, int death_fd) {
  if (g_owned.exchange(true)) {
    return absl::FailedPreconditionError("this process already owns a signalfd-epoll latch (one signalfd per process)");
  }
  SignalfdEpollLatch latch;
  latch.state_ = &shared.state;  // from here on, the destructor undoes what was done
  sigset_t urg;
  sigemptyset(&urg);
  sigaddset(&urg, SIGURG);
  if (const int err = pthread_sigmask(SIG_BLOCK, &urg, &latch.old_mask_); err != 0) {
    return absl::UnavailableError(absl::StrCat("pthread_sigmask: ", std::strerror(err)));
  }
  latch.mask_saved_ = true;
  latch.signal_fd_.Reset(signalfd(-1, &urg, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!latch.signal_fd_.valid()) return absl::UnavailableError(absl::StrCat("signalfd: ", std::strerror(errno)));
  if (absl::Status s = latch.OpenWaitSet(latch.signal_fd_.get(), death_fd); !s.ok()) return s;
  shared.state.owner_pid.store(internal::MyProcPid(), std::memory_order_release);
  return latch;
}

SignalfdEpollLatch::SignalfdEpollLatch(SignalfdEpollLatch&& other) noexcept
    : EpollLatch(std::move(other)),
      signal_fd_(std::move(other.signal_fd_)),
      mask_saved_(std::exchange(other.mask_saved_, false)),
      old_mask_(other.old_mask_) {}

SignalfdEpollLatch& SignalfdEpollLatch::operator=(SignalfdEpollLatch&& other) noexcept {
  if (this != &other) {
    Disown();
    EpollLatch::operator=(std::move(other));
    signal_fd_ = std::move(other.signal_fd_);
    mask_saved_ = std::exchange(other.mask_saved_, false);
    old_mask_ = other.old_mask_;
  }
  return *this;
}

SignalfdEpollLatch::~SignalfdEpollLatch() { Disown(); }

void SignalfdEpollLatch::Disown() noexcept {
  if (state_ == nullptr) return;
  state_->owner_pid.store(0, std::memory_order_release);
  wait_set_.Close();
  signal_fd_.Reset();
  // A SIGURG still pending is discarded when unblocked: its default is to be ignored.
  if (mask_saved_) pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  mask_saved_ = false;
  state_ = nullptr;
  g_owned.store(false);
}

void SignalfdEpollLatch::Set(Shared& shared) noexcept {
  if (!internal::SetAndNeedsWakeup(shared.state)) return;
  const pid_t owner = shared.state.owner_pid.load(std::memory_order_relaxed);
  if (owner == 0) return;
  if (owner == internal::MyProcPid()) {
    // Our own latch, from a signal handler that interrupted our wait: the
    // signal goes to the signalfd the wait is watching.
    if (g_waiting) kill(owner, SIGURG);
  } else {
    kill(owner, SIGURG);
  }
}

void SignalfdEpollLatch::Drain() noexcept {
  char buf[1024];
  for (;;) {
    const ssize_t n = read(signal_fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < static_cast<ssize_t>(sizeof buf)) return;  // empty (EAGAIN), or all there was
  }
}

void SignalfdEpollLatch::SetWaiting(bool waiting) noexcept { g_waiting = waiting ? 1 : 0; }

}  // namespace backendlab::waits
