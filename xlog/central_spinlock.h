// `central-spinlock`: the thread's v1 patch. One lastImportantPos beside the
// insert locks, in a line of its own, under a spinlock of its own; the reader
// takes that spinlock once.
#ifndef BACKENDLAB_XLOG_CENTRAL_SPINLOCK_H_
#define BACKENDLAB_XLOG_CENTRAL_SPINLOCK_H_

#include <span>
#include <string_view>

#include "xlog/internal/locks.h"
#include "xlog/last_important.h"

namespace backendlab::xlog {

struct CentralSpinlock {
  static constexpr std::string_view kName = "central-spinlock";
  static constexpr Tracker kTracker = Tracker::kCentralSpinlock;

  struct Slot {};
  struct alignas(internal::kPadBytes) Central {
    internal::Spinlock lock;
    Lsn last_important = kInvalidLsn;
  };

  // Inserters holding different insert locks finish in any order, so the
  // update keeps the larger value: an assignment would go backwards. (The
  // patch itself is an attachment the thread's text does not show; this is
  // the version that keeps the invariants.)
  static void Record(Slot&, Central& central, Lsn start) noexcept {
    central.lock.Lock();
    if (start > central.last_important) central.last_important = start;
    central.lock.Unlock();
  }

  static Lsn Read(std::span<PaddedInsertLock<Slot>>, Central& central) noexcept {
    central.lock.Lock();
    const Lsn v = central.last_important;
    central.lock.Unlock();
    return v;
  }
};
static_assert(sizeof(CentralSpinlock::Central) == internal::kPadBytes, "the central value has a 128-byte line of its own");
static_assert(LastImportantTracker<CentralSpinlock>);

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_CENTRAL_SPINLOCK_H_
