// Run-time choice of a tracker, made once at a boundary (a configuration of
// the experiment, a benchmark's registration); everything past it is
// compiled for that tracker.
#ifndef BACKENDLAB_XLOG_TRACKER_DISPATCH_H_
#define BACKENDLAB_XLOG_TRACKER_DISPATCH_H_

#include <utility>

#include "xlog/central_atomic.h"
#include "xlog/central_spinlock.h"
#include "xlog/last_important.h"
#include "xlog/per_lock.h"
#include "xlog/per_lock_atomic.h"

namespace backendlab::xlog {

// Calls f.template operator()<T>() with the type of `tracker`:
//   WithTracker(tracker, [&]<LastImportantTracker T>() { ... Wal<T> ... });
template <typename F>
decltype(auto) WithTracker(Tracker tracker, F&& f) {
  switch (tracker) {
    case Tracker::kCentralSpinlock: return std::forward<F>(f).template operator()<CentralSpinlock>();
    case Tracker::kCentralAtomic: return std::forward<F>(f).template operator()<CentralAtomic>();
    case Tracker::kPerLockAtomic: return std::forward<F>(f).template operator()<PerLockAtomic>();
    case Tracker::kPerLock: break;
  }
  return std::forward<F>(f).template operator()<PerLock>();
}

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_TRACKER_DISPATCH_H_
