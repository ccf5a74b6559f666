// The insert path: positions, the ring, PostgreSQL's lock choice, the
// hold-all-locks insert's slot 0, and what each tracker reads when idle.
#include "xlog/wal.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/xlog/tracker_test_types.h"
#include "xlog/tracker_dispatch.h"

namespace backendlab::xlog {
namespace {

using test_util::AllTrackerTypes;
using test_util::PerLockTrackerTypes;
using test_util::TrackerTypeName;

struct Buffers {
  std::vector<std::byte> ring = std::vector<std::byte>(4096);
  std::vector<std::byte> record = std::vector<std::byte>(8192, std::byte{0x5a});
  std::span<const std::byte> Record(size_t n) const { return std::span<const std::byte>(record.data(), n); }
};

template <typename T>
class WalTest : public ::testing::Test {};
TYPED_TEST_SUITE(WalTest, AllTrackerTypes, TrackerTypeName);

TYPED_TEST(WalTest, PositionsFollowTheSizesAndZeroStaysInvalid) {
  Buffers b;
  Wal<TypeParam> wal(8, b.ring);
  EXPECT_EQ(wal.LastImportant(), kInvalidLsn) << "nothing inserted yet";
  Inserter me(0, 8);
  EXPECT_EQ(wal.Insert(me, b.Record(32), true), kFirstRecordLsn);
  EXPECT_EQ(wal.Insert(me, b.Record(200), true), kFirstRecordLsn + 32);
  EXPECT_EQ(wal.Insert(me, b.Record(8), true), kFirstRecordLsn + 232);
  EXPECT_EQ(wal.insert_position(), kFirstRecordLsn + 240);
  EXPECT_EQ(wal.LastImportant(), kFirstRecordLsn + 232);
}

TYPED_TEST(WalTest, UnimportantRecordsNeverAdvanceIt) {
  Buffers b;
  Wal<TypeParam> wal(8, b.ring);
  Inserter me(3, 8);
  const Lsn important = wal.Insert(me, b.Record(32), true);
  for (int i = 0; i < 10; ++i) wal.Insert(me, b.Record(200), false);
  EXPECT_EQ(wal.LastImportant(), important);
  wal.InsertHoldingAll(b.Record(32), false);
  EXPECT_EQ(wal.LastImportant(), important) << "nor does an unimportant insert holding every lock";
}

TYPED_TEST(WalTest, ARecordIsCopiedIntoTheRingWithItsStartAsHeaderAcrossTheWrap) {
  Buffers b;
  for (size_t i = 0; i < b.record.size(); ++i) b.record[i] = std::byte(i % 251);
  Wal<TypeParam> wal(1, b.ring);
  Inserter me(0, 1);
  wal.Insert(me, b.Record(4000), true);                // up to 4008 of 4096
  const Lsn start = wal.Insert(me, b.Record(200), true);  // wraps after 88 bytes
  ASSERT_EQ(start, 4008u);
  Lsn header = 0;
  std::memcpy(&header, b.ring.data() + 4008, sizeof header);
  EXPECT_EQ(header, start);
  for (size_t i = 8; i < 200; ++i) {
    EXPECT_EQ(b.ring[(4008 + i) % 4096], std::byte(i % 251)) << "byte " << i;
  }
}

TEST(WalLockChoiceTest, TheFirstLockIsTheProcNumberModuloTheLocks) {
  EXPECT_EQ(Inserter(0, 8).lock_to_try, 0);
  EXPECT_EQ(Inserter(13, 8).lock_to_try, 5);
  EXPECT_EQ(Inserter(13, 1).lock_to_try, 0);
  EXPECT_EQ(Inserter(70, 64).lock_to_try, 6);
}

// WALInsertLockAcquire: an acquire that had to wait makes the inserter try
// the next lock next time; one that did not keeps it where it is.
TEST(WalLockChoiceTest, AContendedAcquireMovesToTheNextLock) {
  Buffers b;
  Wal<PerLock> wal(8, b.ring);
  Inserter me(7, 8);
  wal.Insert(me, b.Record(32), true);
  EXPECT_EQ(me.lock_to_try, 7) << "free at once: stay";
  EXPECT_EQ(me.contended, 0);

  // Lock 7 held elsewhere, as GetLastImportantRecPtr holds each lock in
  // turn, until the inserter has had time to find it held. Should the
  // scheduler not have run the inserter by then, it found the lock free and
  // the attempt is made again with a longer hold: no timing is checked.
  for (int hold_ms = 20; me.contended == 0 && hold_ms <= 2000; hold_ms *= 4) {
    me = Inserter(7, 8);
    wal.LockForTesting(7);
    std::thread inserter([&] { wal.Insert(me, b.Record(32), true); });
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    wal.UnlockForTesting(7);
    inserter.join();
  }
  EXPECT_EQ(me.contended, 1);
  EXPECT_EQ(me.lock_to_try, 0) << "after 7 of 8 comes 0";
}

template <typename T>
class PerLockSlotTest : public ::testing::Test {};
TYPED_TEST_SUITE(PerLockSlotTest, PerLockTrackerTypes, TrackerTypeName);

// XLogInsertRecord: "When holding all locks, just update the first one."
TYPED_TEST(PerLockSlotTest, AHoldAllLocksInsertUpdatesSlotZero) {
  Buffers b;
  Wal<TypeParam> wal(8, b.ring);
  Inserter me(3, 8);
  const Lsn own = wal.Insert(me, b.Record(32), true);
  EXPECT_EQ(TypeParam::SlotValue(wal.slot(3)), own);
  const Lsn all = wal.InsertHoldingAll(b.Record(200), true);
  EXPECT_EQ(TypeParam::SlotValue(wal.slot(0)), all);
  EXPECT_EQ(TypeParam::SlotValue(wal.slot(3)), own) << "the inserter's own slot is left alone";
  for (int i : {1, 2, 4, 5, 6, 7}) EXPECT_EQ(TypeParam::SlotValue(wal.slot(i)), kInvalidLsn) << "slot " << i;
  EXPECT_EQ(wal.LastImportant(), all);
}

}  // namespace
}  // namespace backendlab::xlog
