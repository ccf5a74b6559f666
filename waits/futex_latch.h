// `futex`: no PostgreSQL analogue, the floor a latch could reach on Linux.
// is_set itself is the futex word: the owner sleeps in FUTEX_WAIT on it
// (the kernel compares it with 0 before sleeping, so a set between the
// owner's check and its sleep is never lost), and SetLatch wakes it with
// FUTEX_WAKE only when maybe_sleeping says it may be asleep. Shared (not
// FUTEX_PRIVATE) futexes, since setter and owner are different processes.
// Like `semaphore`, it watches no descriptor: no socket, no postmaster death.
#ifndef BACKENDLAB_WAITS_FUTEX_LATCH_H_
#define BACKENDLAB_WAITS_FUTEX_LATCH_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "waits/latch.h"

namespace backendlab::waits {

class FutexLatch {
 public:
  struct Shared {
    LatchState state;
  };
  static constexpr LatchKind kKind = LatchKind::kFutex;
  static constexpr bool kWaitsOnSocket = false;
  static constexpr bool kWatchesPostmasterDeath = false;

  static absl::Status InitShared(Shared& shared);
  static void DestroyShared(Shared&) noexcept {}
  static absl::StatusOr<FutexLatch> Own(Shared& shared, int death_fd);
  // Async-signal-safe: atomics, and one futex(FUTEX_WAKE) for a maybe-sleeping owner.
  static void Set(Shared& shared) noexcept;

  FutexLatch(FutexLatch&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  FutexLatch& operator=(FutexLatch&& other) noexcept;
  ~FutexLatch();

  void Reset() noexcept;
  uint32_t Wait(int64_t timeout_ms);

 private:
  FutexLatch() = default;
  LatchState* state_ = nullptr;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_FUTEX_LATCH_H_
