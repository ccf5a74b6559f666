// `central-atomic`: the thread's second proposal. One atomic lastImportantPos
// in a line of its own, raised by compare-and-swap; the reader loads it.
#ifndef BACKENDLAB_XLOG_CENTRAL_ATOMIC_H_
#define BACKENDLAB_XLOG_CENTRAL_ATOMIC_H_

#include <atomic>
#include <span>
#include <string_view>

#include "xlog/internal/locks.h"
#include "xlog/last_important.h"

namespace backendlab::xlog {

struct CentralAtomic {
  static constexpr std::string_view kName = "central-atomic";
  static constexpr Tracker kTracker = Tracker::kCentralAtomic;

  struct Slot {};
  struct alignas(internal::kPadBytes) Central {
    std::atomic<Lsn> last_important{kInvalidLsn};
  };

  // A compare-and-swap max. A plain store goes backwards: inserters holding
  // different locks finish out of order, and the later store of the earlier
  // record would win (tests/xlog plants exactly that bug and catches it).
  static void Record(Slot&, Central& central, Lsn start) noexcept {
    Lsn current = central.last_important.load(std::memory_order_relaxed);
    while (current < start &&
           !central.last_important.compare_exchange_weak(current, start, std::memory_order_release,
                                                         std::memory_order_relaxed)) {
    }
  }

  static Lsn Read(std::span<PaddedInsertLock<Slot>>, Central& central) noexcept {
    return central.last_important.load(std::memory_order_acquire);
  }
};
static_assert(sizeof(CentralAtomic::Central) == internal::kPadBytes, "the central value has a 128-byte line of its own");
static_assert(LastImportantTracker<CentralAtomic>);

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_CENTRAL_ATOMIC_H_
