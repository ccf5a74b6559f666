// `per-lock-atomic`: the thread's last proposal. lastImportantAt stays in each
// insert lock's line but is an atomic, stored with release semantics by the
// lock's holder; the reader loads every slot without taking any lock.
#ifndef BACKENDLAB_XLOG_PER_LOCK_ATOMIC_H_
#define BACKENDLAB_XLOG_PER_LOCK_ATOMIC_H_

#include <algorithm>
#include <atomic>
#include <span>
#include <string_view>

#include "xlog/last_important.h"

namespace backendlab::xlog {

struct PerLockAtomic {
  static constexpr std::string_view kName = "per-lock-atomic";
  static constexpr Tracker kTracker = Tracker::kPerLockAtomic;

  struct Slot {
    std::atomic<Lsn> last_important{kInvalidLsn};
  };
  struct Central {};

  // A plain store, not a compare-and-swap: a slot has one writer at a time
  // (its lock's holder), and successive holders reserve increasing positions
  // while holding the lock, so each slot only grows. On x86-64 a release
  // store is an ordinary mov: the inserter's cost is per-lock's.
  static void Record(Slot& held, Central&, Lsn start) noexcept {
    held.last_important.store(start, std::memory_order_release);
  }

  // Each slot only grows, so the max of loads taken one after the other
  // never goes backwards between calls, and includes every insert that
  // finished before the call began.
  static Lsn Read(std::span<PaddedInsertLock<Slot>> locks, Central&) noexcept {
    Lsn result = kInvalidLsn;
    for (const PaddedInsertLock<Slot>& l : locks) {
      result = std::max(result, l.slot.last_important.load(std::memory_order_acquire));
    }
    return result;
  }

  static Lsn SlotValue(const Slot& s) { return s.last_important.load(std::memory_order_relaxed); }
};
static_assert(LastImportantTracker<PerLockAtomic>);

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_PER_LOCK_ATOMIC_H_
