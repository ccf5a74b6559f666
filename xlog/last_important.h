// The last important record LSN: the concept every way of tracking it
// implements, and the names shared by code, CLI flags, JSON keys and docs.
#ifndef BACKENDLAB_XLOG_LAST_IMPORTANT_H_
#define BACKENDLAB_XLOG_LAST_IMPORTANT_H_

#include <atomic>
#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "base/names.h"
#include "xlog/internal/locks.h"

namespace backendlab::xlog {

// A WAL position in bytes (PostgreSQL's XLogRecPtr). 0 is invalid
// (InvalidXLogRecPtr): no record starts there, so "no important record yet"
// reads as 0.
using Lsn = uint64_t;
inline constexpr Lsn kInvalidLsn = 0;

// A reader must never see half of an LSN (xlog/README.md, invariant 5), and the
// atomic variants must not hide a lock inside std::atomic.
static_assert(std::atomic<Lsn>::is_always_lock_free,
              "the atomic variants need lock-free 64-bit atomics: a hidden lock would be a fifth design");

// The four ways, in the order the thread discussed them.
enum class Tracker { kPerLock, kCentralSpinlock, kCentralAtomic, kPerLockAtomic };
inline constexpr NamedValue<Tracker> kTrackerNames[] = {{Tracker::kPerLock, "per-lock"},
                                                        {Tracker::kCentralSpinlock, "central-spinlock"},
                                                        {Tracker::kCentralAtomic, "central-atomic"},
                                                        {Tracker::kPerLockAtomic, "per-lock-atomic"}};
inline constexpr auto kAllTrackers = ValuesOf(kTrackerNames);

std::string_view TrackerName(Tracker tracker);
absl::StatusOr<Tracker> ParseTracker(std::string_view name);

// One insert lock as the WAL keeps it: the lock and the tracker's per-lock
// value in one 128-byte line, as PostgreSQL's WALInsertLockPadded keeps
// lastImportantAt beside the LWLock.
template <typename Slot>
struct alignas(internal::kPadBytes) PaddedInsertLock {
  internal::InsertLock lock;
  [[no_unique_address]] Slot slot;
};

// A way of tracking the last important LSN.
//   Slot: what each insert lock carries (empty for the central ways).
//   Central: state of its own beside the insert locks (empty for the per-lock ways).
//   Record(held, central, start): an important record starting at `start` was
//     copied; called with the insert lock that owns `held` held (slot 0's lock
//     when the inserter holds them all).
//   Read(locks, central): GetLastImportantRecPtr, from any thread, at any time.
// Both are called on the hot path: no allocation, no exception, no syscall
// unless a lock is contended.
template <typename T>
concept LastImportantTracker =
    std::default_initializable<typename T::Slot> && std::default_initializable<typename T::Central> &&
    requires(typename T::Slot& slot, typename T::Central& central, Lsn lsn,
             std::span<PaddedInsertLock<typename T::Slot>> locks) {
      { T::kName } -> std::convertible_to<std::string_view>;
      { T::Record(slot, central, lsn) } noexcept;
      { T::Read(locks, central) } noexcept -> std::same_as<Lsn>;
    };

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_LAST_IMPORTANT_H_
