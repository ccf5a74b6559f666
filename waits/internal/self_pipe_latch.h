// What the two 2010 latches (selfpipe-select, selfpipe-poll) share:
// PostgreSQL 9.1's unix_latch.c as first committed. SetLatch always signals
// another owner (kill SIGUSR1), waiting or not; the owner's SIGUSR1 handler
// writes a byte to its self-pipe while it waits, and the wait loop drains the
// pipe, checks the latch, and sleeps in select() or poll() on the pipe (and a
// socket). The derived latch brings the sleep: Block().
#ifndef BACKENDLAB_WAITS_INTERNAL_SELF_PIPE_LATCH_H_
#define BACKENDLAB_WAITS_INTERNAL_SELF_PIPE_LATCH_H_

#include <sys/time.h>

#include <cstdint>
#include <new>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "waits/internal/my_pid.h"
#include "waits/internal/wait_protocol.h"
#include "waits/latch.h"

namespace backendlab::waits::internal {

// The process-wide half, as 2010's (static variables and a signal handler):
// one self-pipe per process, so one owned self-pipe latch.
//
// Makes the pipe (both ends non-blocking) and installs the SIGUSR1 handler;
// FailedPrecondition if this process already owns a self-pipe latch.
absl::Status OwnSelfPipe();
// Restores SIGUSR1's previous action and closes the pipe.
void DisownSelfPipe() noexcept;
int SelfPipeReadFd();
// drainSelfPipe(): 16-byte reads until EAGAIN (at least two read()s when a
// byte was there, one when not: 2010's had no short-read shortcut).
void DrainSelfPipe() noexcept;
void SetSelfPipeWaiting(bool waiting) noexcept;
// 2010's SetLatch. Async-signal-safe.
void SetSelfPipeLatch(LatchState& state) noexcept;

// One wait's timeout, as each sleep needs it.
struct SleepTimeout {
  int64_t timeout_ms = -1;  // < 0: none
  int64_t start_ns = 0;
  timeval tv{};             // select()'s, made once per wait: Linux's select() updates it
  bool tv_made = false;
};

// What Block() returns besides events: interrupted by a signal (EINTR).
inline constexpr int64_t kInterrupted = -2;

// Derived: the latch (selfpipe-select, selfpipe-poll), which brings
// kKind and Block() and befriends this class (its constructor is private).
template <typename Derived>
class SelfPipeLatch {
 public:
  struct Shared {
    LatchState state;
  };
  static constexpr bool kWaitsOnSocket = true;
  // 2010's code had no postmaster-death pipe (the 2016 code has one).
  static constexpr bool kWatchesPostmasterDeath = false;

  static absl::Status InitShared(Shared& shared) {
    new (&shared) Shared();
    return absl::OkStatus();
  }
  static void DestroyShared(Shared&) noexcept {}
  // The self-pipe and the SIGUSR1 handler (pipe2, sigaction); the death pipe
  // is not watched. FailedPrecondition if this process owns a self-pipe latch.
  static absl::StatusOr<Derived> Own(Shared& shared, int /*death_fd*/) {
    Derived latch;
    if (absl::Status s = OwnSelfPipe(); !s.ok()) return s;
    latch.state_ = &shared.state;
    shared.state.owner_pid.store(MyProcPid(), std::memory_order_release);
    return latch;
  }
  static void Set(Shared& shared) noexcept { SetSelfPipeLatch(shared.state); }

  // With the barrier later versions added: without it, the store of 0 can
  // pass the caller's next load (of its work flag) in the CPU's store
  // buffer, a setter then finds is_set still 1 and sends nothing, and the
  // owner sleeps with work pending. The tests lost a wake-up that way in
  // under 60,000 cycles on x86 before it was added.
  void Reset() noexcept {
    state_->is_set.store(0, std::memory_order_relaxed);
    FullBarrier();
  }

  uint32_t Wait(int64_t timeout_ms) { return WaitOrSocket(-1, 0, timeout_ms); }

  // WaitLatchOrSocket's 2010 loop: drain, check, sleep, until the latch is
  // set, the socket is ready, or the timeout passes; a signal (EINTR) and a
  // pipe byte both just go round again.
  uint32_t WaitOrSocket(int socket, uint32_t events, int64_t timeout_ms) {
    SleepTimeout timeout{timeout_ms, timeout_ms >= 0 ? NowNs() : 0};
    uint32_t result = 0;
    SetSelfPipeWaiting(true);
    for (;;) {
      DrainSelfPipe();
      if (state_->is_set.load(std::memory_order_relaxed) != 0) {
        result = kLatchSet;
        break;
      }
      const int64_t rc = static_cast<Derived&>(*this).Block(SelfPipeReadFd(), socket, events, timeout);
      if (rc == kInterrupted) continue;
      if (rc == kTimedOut) {
        result = kTimeout;
        break;
      }
      if (rc < 0) {  // the kernel refused (ENOMEM); errno says why
        result = kWaitFailed;
        break;
      }
      if (rc & (kSocketReadable | kSocketWritable)) {
        result = static_cast<uint32_t>(rc);
        break;
      }
      // Woken by the pipe: the latch check above decides.
    }
    SetSelfPipeWaiting(false);
    return result;
  }

 protected:
  SelfPipeLatch() = default;
  SelfPipeLatch(SelfPipeLatch&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  SelfPipeLatch& operator=(SelfPipeLatch&& other) noexcept {
    Disown();
    state_ = std::exchange(other.state_, nullptr);
    return *this;
  }
  ~SelfPipeLatch() { Disown(); }

  void Disown() noexcept {
    if (state_ == nullptr) return;
    state_->owner_pid.store(0, std::memory_order_release);
    DisownSelfPipe();
    state_ = nullptr;
  }

  LatchState* state_ = nullptr;
};

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_SELF_PIPE_LATCH_H_
