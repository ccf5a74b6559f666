// The WAL insert path, templated over the way the last important LSN is
// tracked: an insert lock chosen as WALInsertLockAcquire chooses it, space
// reserved under a central spinlock (ReserveXLogInsertLocation), the record
// copied into a shared ring (CopyXLogRecordToWAL), the tracker told of an
// important record under the held lock, the lock released.
#ifndef BACKENDLAB_XLOG_WAL_H_
#define BACKENDLAB_XLOG_WAL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "base/check.h"
#include "xlog/internal/locks.h"
#include "xlog/last_important.h"

namespace backendlab::xlog {

// Records are aligned to 8 bytes (PostgreSQL's MAXALIGN), and the first 8
// bytes of the WAL are never a record, so 0 stays the invalid LSN.
inline constexpr uint32_t kRecordAlign = 8;
inline constexpr Lsn kFirstRecordLsn = 8;

// PostgreSQL's NUM_XLOGINSERT_LOCKS.
inline constexpr int kPostgresInsertLocks = 8;

// One inserting backend's own state (WALInsertLockAcquire's static
// lockToTry): the lock it tries next, first MyProcNumber % locks.
struct Inserter {
  Inserter(int proc_number, int locks) : lock_to_try(proc_number % locks) {}
  int lock_to_try;
  int64_t contended = 0;  // acquires that had to wait, each a move to the next lock
};

template <LastImportantTracker T>
class Wal {
 public:
  using Slot = typename T::Slot;
  using LockLine = PaddedInsertLock<Slot>;
  static_assert(sizeof(LockLine) == internal::kPadBytes && alignof(LockLine) == internal::kPadBytes,
                "an insert lock and its slot fill one 128-byte line, as WALInsertLockPadded does");

  // `locks` insert locks; records go into `ring`, which the caller owns: a
  // power of two of bytes, at least as large as any record, 8-aligned. The
  // ring is overwritten as it wraps (no WAL writer: the copy is the cost).
  Wal(int locks, std::span<std::byte> ring)
      : locks_(std::make_unique<LockLine[]>(static_cast<size_t>(locks))),
        lock_count_(locks),
        ring_(ring),
        ring_mask_(ring.size() - 1) {
    BACKENDLAB_CHECK(locks >= 1);
    BACKENDLAB_CHECK(!ring.empty() && (ring.size() & ring_mask_) == 0);
    BACKENDLAB_CHECK(reinterpret_cast<uintptr_t>(ring.data()) % kRecordAlign == 0);
  }

  int locks() const { return lock_count_; }

  // Inserts `record` (a multiple of 8 bytes, at least 8, at most the ring)
  // and returns its start LSN. The first 8 bytes in the ring become the
  // start LSN, as a record's header carries its xl_prev.
  Lsn Insert(Inserter& me, std::span<const std::byte> record, bool important) noexcept {
    LockLine& line = locks_[static_cast<size_t>(me.lock_to_try)];
    if (!line.lock.Acquire()) {
      // WALInsertLockAcquire: a lock that made us wait is left for next time.
      me.lock_to_try = (me.lock_to_try + 1) % lock_count_;
      ++me.contended;
    }
    const Lsn start = Reserve(record.size());
    Copy(start, record);
    // Most records are important: their update is the straight path, for
    // every tracker alike (GCC otherwise moved per-lock-atomic's store out of
    // line and kept per-lock's in it, a layout difference, not a cost of the
    // design).
    if (important) [[likely]] T::Record(line.slot, central_, start);
    line.lock.Release();
    return start;
  }

  // An insert holding every lock (WALInsertLockAcquireExclusive, taken in
  // order as PostgreSQL does, as for a checkpoint record or an xlog switch):
  // the tracker is told through slot 0.
  Lsn InsertHoldingAll(std::span<const std::byte> record, bool important) noexcept {
    for (int i = 0; i < lock_count_; ++i) (void)locks_[static_cast<size_t>(i)].lock.Acquire();
    const Lsn start = Reserve(record.size());
    Copy(start, record);
    if (important) T::Record(locks_[0].slot, central_, start);
    for (int i = lock_count_ - 1; i >= 0; --i) locks_[static_cast<size_t>(i)].lock.Release();
    return start;
  }

  // GetLastImportantRecPtr.
  Lsn LastImportant() noexcept { return T::Read(std::span<LockLine>(locks_.get(), static_cast<size_t>(lock_count_)), central_); }

  // For tests, with no inserter running.
  const Slot& slot(int i) const { return locks_[static_cast<size_t>(i)].slot; }
  Lsn insert_position() const { return reservation_.curr; }
  void LockForTesting(int i) { (void)locks_[static_cast<size_t>(i)].lock.Acquire(); }
  void UnlockForTesting(int i) { locks_[static_cast<size_t>(i)].lock.Release(); }

 private:
  // CurrBytePos and PrevBytePos under insertpos_lck: the one section every
  // insert of every backend serialises on, kept to a few instructions.
  struct alignas(internal::kPadBytes) Reservation {
    internal::Spinlock lock;
    Lsn curr = kFirstRecordLsn;
    Lsn prev = kInvalidLsn;
  };
  static_assert(sizeof(Reservation) == internal::kPadBytes, "the reservation has a 128-byte line of its own");

  Lsn Reserve(size_t bytes) noexcept {
    reservation_.lock.Lock();
    const Lsn start = reservation_.curr;
    reservation_.curr = start + bytes;
    reservation_.prev = start;
    reservation_.lock.Unlock();
    return start;
  }

  void Copy(Lsn start, std::span<const std::byte> record) noexcept {
    const size_t offset = start & ring_mask_;
    const size_t first = std::min(record.size(), ring_.size() - offset);
    std::memcpy(ring_.data() + offset, record.data(), first);
    std::memcpy(ring_.data(), record.data() + first, record.size() - first);
    // offset is 8-aligned and the ring a power of two >= 8: never split.
    std::memcpy(ring_.data() + offset, &start, sizeof start);
  }

  Reservation reservation_;
  [[no_unique_address]] typename T::Central central_;
  std::unique_ptr<LockLine[]> locks_;
  int lock_count_;
  std::span<std::byte> ring_;
  size_t ring_mask_;
};

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_WAL_H_
