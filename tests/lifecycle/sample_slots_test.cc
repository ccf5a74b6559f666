// The sample file between postmaster and tool: whole chunks in, warm-up
// backends left out, damage reported without losing what came before.
#include "lifecycle/internal/sample_slots.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/test_util/temp_dir.h"

namespace backendlab::lifecycle::internal {
namespace {

// Puts n samples of `pid` into `buffer`, as a handler would.
void Fill(profiling::SampleBuffer& buffer, int32_t pid, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    profiling::RawSample& s = buffer.samples()[buffer.reserved.fetch_add(1)];
    s.pid = pid;
    s.depth = 1;
    s.pcs[0] = 0x1000 + i;
    buffer.committed.store(i + 1);
  }
}

class SampleFileTest : public test_util::TempDirTest {
 protected:
  int OpenFile(int flags) { return open((dir_ + "/samples").c_str(), flags | O_CREAT, 0600); }
};

TEST_F(SampleFileTest, WarmupBackendsAreLeftOutAndDamageKeepsWhatCameBefore) {
  absl::StatusOr<SampleSlots> slots = SampleSlots::Create(2);
  ASSERT_TRUE(slots.ok()) << slots.status();
  const int fd = OpenFile(O_RDWR);
  ASSERT_GE(fd, 0);
  Fill(*slots->Backend(0), 100, 3);
  ASSERT_TRUE(AppendSampleChunk(fd, 0, *slots->Backend(0)));  // warm-up
  slots->Backend(0)->Reset();
  Fill(*slots->Backend(0), 101, 2);
  ASSERT_TRUE(AppendSampleChunk(fd, 5, *slots->Backend(0)));
  Fill(*slots->Postmaster(), 7, 4);
  slots->Postmaster()->dropped.store(9);
  ASSERT_TRUE(AppendSampleChunk(fd, -1, *slots->Postmaster()));

  SampleHarvest harvest;
  ASSERT_TRUE(ReadSampleChunks(fd, /*warmup=*/1, harvest).ok());
  ASSERT_EQ(harvest.samples.size(), 6u);
  EXPECT_EQ(harvest.samples[0].pid, 101);
  EXPECT_EQ(harvest.samples[2].pid, 7);
  EXPECT_EQ(harvest.dropped, 9);

  const char torn[5] = {1, 2, 3, 4, 5};  // half a header, as a crash mid-write would leave
  ASSERT_EQ(write(fd, torn, sizeof torn), static_cast<ssize_t>(sizeof torn));
  SampleHarvest damaged;
  const absl::Status s = ReadSampleChunks(fd, 1, damaged);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_EQ(damaged.samples.size(), 6u) << "the chunks before the damage are kept";
  close(fd);
}

TEST_F(SampleFileTest, AFailedAppendLeavesWholeChunksOnly) {
  absl::StatusOr<SampleSlots> slots = SampleSlots::Create(1);
  ASSERT_TRUE(slots.ok()) << slots.status();
  const int fd = OpenFile(O_RDONLY);  // every write fails
  ASSERT_GE(fd, 0);
  Fill(*slots->Backend(0), 100, 3);
  EXPECT_FALSE(AppendSampleChunk(fd, 0, *slots->Backend(0)));
  EXPECT_EQ(lseek(fd, 0, SEEK_END), 0);
  SampleHarvest harvest;
  EXPECT_TRUE(ReadSampleChunks(fd, 0, harvest).ok());
  EXPECT_TRUE(harvest.samples.empty());
  close(fd);
}

// Found by sample_chunks_fuzzer: a chunk whose samples claim more frames than
// they hold (or fewer than none) was accepted, and symbolizing it read past
// pcs; counts of dropped samples could overflow when added up.
TEST_F(SampleFileTest, InconsistentChunksAreDataLoss) {
  absl::StatusOr<SampleSlots> slots = SampleSlots::Create(1);
  ASSERT_TRUE(slots.ok()) << slots.status();
  for (const int32_t depth : {profiling::kMaxFrames + 1, -1}) {
    const int fd = OpenFile(O_RDWR | O_TRUNC);
    ASSERT_GE(fd, 0);
    slots->Backend(0)->Reset();
    Fill(*slots->Backend(0), 100, 2);
    ASSERT_TRUE(AppendSampleChunk(fd, 1, *slots->Backend(0)));
    slots->Backend(0)->samples()[1].depth = depth;
    ASSERT_TRUE(AppendSampleChunk(fd, 2, *slots->Backend(0)));
    SampleHarvest harvest;
    const absl::Status s = ReadSampleChunks(fd, 0, harvest);
    EXPECT_TRUE(absl::IsDataLoss(s)) << depth << ": " << s;
    EXPECT_EQ(harvest.samples.size(), 2u) << "the chunk before the damage is kept";
    close(fd);
  }

  const int fd = OpenFile(O_RDWR | O_TRUNC);
  ASSERT_GE(fd, 0);
  slots->Backend(0)->Reset();
  slots->Backend(0)->dropped.store(uint64_t{INT64_MAX});
  ASSERT_TRUE(AppendSampleChunk(fd, 1, *slots->Backend(0)));
  ASSERT_TRUE(AppendSampleChunk(fd, 2, *slots->Backend(0)));
  SampleHarvest harvest;
  EXPECT_TRUE(absl::IsDataLoss(ReadSampleChunks(fd, 0, harvest)));
  EXPECT_EQ(harvest.dropped, INT64_MAX);
  close(fd);
}

}  // namespace
}  // namespace backendlab::lifecycle::internal
