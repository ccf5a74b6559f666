// `per-lock`: PostgreSQL's design (xlog.c since 9.6). Each insert lock's line
// holds lastImportantAt, written by the lock's holder; GetLastImportantRecPtr
// takes every lock in turn, exclusively, to read it without a torn read.
#ifndef BACKENDLAB_XLOG_PER_LOCK_H_
#define BACKENDLAB_XLOG_PER_LOCK_H_

#include <algorithm>
#include <span>
#include <string_view>

#include "xlog/last_important.h"

namespace backendlab::xlog {

struct PerLock {
  static constexpr std::string_view kName = "per-lock";
  static constexpr Tracker kTracker = Tracker::kPerLock;

  // A plain value: only ever written or read with its lock held.
  struct Slot {
    Lsn last_important = kInvalidLsn;
  };
  struct Central {};

  // The holder of this slot's lock writes it: its line is already in the
  // holder's cache, so the write costs no transfer.
  static void Record(Slot& held, Central&, Lsn start) noexcept { held.last_important = start; }

  static Lsn Read(std::span<PaddedInsertLock<Slot>> locks, Central&) noexcept {
    Lsn result = kInvalidLsn;
    for (PaddedInsertLock<Slot>& l : locks) {
      (void)l.lock.Acquire();
      const Lsn v = l.slot.last_important;
      l.lock.Release();
      result = std::max(result, v);
    }
    return result;
  }

  // For tests, with no inserter running.
  static Lsn SlotValue(const Slot& s) { return s.last_important; }
};
static_assert(LastImportantTracker<PerLock>);

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_PER_LOCK_H_
