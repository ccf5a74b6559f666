// The two locks of the insert path, modelled on PostgreSQL's: a test-and-set
// spinlock (s_lock.h's x86-64 tas()/TAS_SPIN) for the central reservation, and
// an exclusive-only lightweight lock for the insert locks (an LWLock taken
// LW_EXCLUSIVE, reporting whether it had to wait).
#ifndef BACKENDLAB_XLOG_INTERNAL_LOCKS_H_
#define BACKENDLAB_XLOG_INTERNAL_LOCKS_H_

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace backendlab::xlog::internal {

// PostgreSQL pads each WAL insert lock to 128 bytes: two 64-byte lines, which
// keeps neighbours apart even from x86's adjacent-line prefetcher (it fetches
// lines in pairs, so locks 64 bytes apart would still share traffic). Every central line here uses
// the same padding.
inline constexpr size_t kPadBytes = 128;

// After this many spins on a held lock, give the CPU away: on a 2-core machine
// running more threads than cores, the holder may be waiting for our core.
// PostgreSQL's s_lock sleeps (pg_usleep from 1 ms up) after spins_per_delay
// spins and an LWLock waiter sleeps on a semaphore; a yield is the smallest
// step with the same purpose, and keeps a preempted holder's wait short.
inline constexpr int kSpinsBeforeYield = 128;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();  // s_lock.h's spin_delay(): "rep; nop"
#endif
}

// One waiting step of a spin loop: a pause, and every kSpinsBeforeYield steps
// a yield. The one backoff of both locks.
class SpinBackoff {
 public:
  void Pause() noexcept {
    CpuRelax();
    if (++spins_ == kSpinsBeforeYield) {
      sched_yield();
      spins_ = 0;
    }
  }

 private:
  int spins_ = 0;
};

// insertpos_lck: one byte, taken by an atomic exchange; while held, waiters
// read without writing (TAS_SPIN's non-locking test) so the holder's line is
// not pulled away on every spin.
class Spinlock {
 public:
  void Lock() noexcept {
    if (flag_.exchange(1, std::memory_order_acquire) == 0) return;
    LockSlow();
  }
  void Unlock() noexcept { flag_.store(0, std::memory_order_release); }

 private:
  void LockSlow() noexcept {
    SpinBackoff backoff;
    for (;;) {
      while (flag_.load(std::memory_order_relaxed) != 0) backoff.Pause();
      if (flag_.exchange(1, std::memory_order_acquire) == 0) return;
    }
  }

  std::atomic<uint8_t> flag_{0};
};

// A WAL insert lock. Acquire() returns whether the lock was free at once,
// which is what WALInsertLockAcquire looks at to move to the next lock.
// Waiting spins, then yields (an LWLock would queue and sleep; see
// kSpinsBeforeYield).
class InsertLock {
 public:
  bool Acquire() noexcept {
    uint32_t expected = 0;
    if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) return true;
    AcquireSlow();
    return false;
  }
  void Release() noexcept { state_.store(0, std::memory_order_release); }

 private:
  void AcquireSlow() noexcept {
    SpinBackoff backoff;
    for (;;) {
      uint32_t expected = 0;
      if (state_.load(std::memory_order_relaxed) == 0 &&
          state_.compare_exchange_weak(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
      backoff.Pause();
    }
  }

  std::atomic<uint32_t> state_{0};
};

}  // namespace backendlab::xlog::internal

#endif  // BACKENDLAB_XLOG_INTERNAL_LOCKS_H_
