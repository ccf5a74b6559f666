// `semaphore`: a latch on a POSIX semaphore in shared memory (sem_init with
// pshared), the project's stand-in for the 2010 latch thread's fastest (6 µs
// per ping-pong), whose "native semaphors on linux" are of a kind the thread
// does not state: SetLatch posts once per set, the owner sleeps in sem_wait. It cannot also wait on a
// socket or on the postmaster-death pipe — a process in sem_wait watches no
// descriptor — so it is a Latch but not a SocketLatch, and PostgreSQL kept
// semaphores for lock waits (PGSemaphore) only. glibc's semaphore is a futex
// word with a waiter count: sem_post enters the kernel only when someone
// sleeps, sem_wait only when the count is 0.
#ifndef BACKENDLAB_WAITS_SEMAPHORE_LATCH_H_
#define BACKENDLAB_WAITS_SEMAPHORE_LATCH_H_

#include <semaphore.h>

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "waits/latch.h"

namespace backendlab::waits {

class SemaphoreLatch {
 public:
  struct Shared {
    LatchState state;
    sem_t semaphore;
  };
  static constexpr LatchKind kKind = LatchKind::kSemaphore;
  static constexpr bool kWaitsOnSocket = false;
  static constexpr bool kWatchesPostmasterDeath = false;

  // sem_init(pshared = 1, 0).
  static absl::Status InitShared(Shared& shared);
  static void DestroyShared(Shared& shared) noexcept;
  static absl::StatusOr<SemaphoreLatch> Own(Shared& shared, int death_fd);
  // One sem_post per set; async-signal-safe (POSIX lists sem_post).
  static void Set(Shared& shared) noexcept;

  SemaphoreLatch(SemaphoreLatch&& other) noexcept : shared_(std::exchange(other.shared_, nullptr)) {}
  SemaphoreLatch& operator=(SemaphoreLatch&& other) noexcept;
  ~SemaphoreLatch();

  void Reset() noexcept;
  // sem_wait (sem_clockwait on CLOCK_MONOTONIC with a timeout) until the
  // latch is set. A post left by a set the owner saw before it slept wakes a
  // later wait once for nothing: the loop goes back to sleep.
  uint32_t Wait(int64_t timeout_ms);

 private:
  SemaphoreLatch() = default;
  Shared* shared_ = nullptr;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_SEMAPHORE_LATCH_H_
