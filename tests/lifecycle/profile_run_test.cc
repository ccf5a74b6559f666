// lifecycle::RunProfile: a sampled cycle's figures as `backendlab profile`
// prints them, derived once: the phase table accounts for every tagged
// sample, reap has no counter time, wait has one only on the wall clock, and
// the backends' folded stacks are what the views rank.
#include "lifecycle/profile_run.h"

#include <unistd.h>

#include <cstdint>

#include "base/check.h"
#include "buffers/shared_buffers.h"
#include "gtest/gtest.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/cycle.h"
#include "profiling/sampler.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/temp_dir.h"

namespace backendlab::lifecycle {
namespace {

class ProfileRunTest : public test_util::PrivateTmpdirTest {
 protected:
  static CycleOptions Options(profiling::SampleClock clock) {
    CycleOptions o;
    absl::StatusOr<buffers::SharedBuffers> size = buffers::ParseSharedBuffers("128MB");
    BACKENDLAB_CHECK(size.ok());
    o.backend.shared_buffers = *size;
    o.backend.work_lookups = 10;
    o.connections = 20;
    o.warmup = 2;
    o.baseline_forks = 2;
    o.sampler = profiling::SamplerOptions{.frequency_hz = 5'000, .clock = clock, .unwinder = profiling::Unwinder::kLibunwind};
    return o;
  }

  // The counter side of the phase table, whatever the clock: reap has no
  // counter time, and the rest adds up to the whole.
  static void ExpectCountersAddUp(const ProfileRun& run) {
    ASSERT_EQ(run.phases.size(), static_cast<size_t>(kSampleTagWait + 1)) << "the phases, then wait";
    double counter_percent = 0;
    for (size_t i = 0; i < run.phases.size(); ++i) {
      EXPECT_EQ(run.phases[i].tag, static_cast<int32_t>(i));
      counter_percent += run.phases[i].counter_percent.value_or(0);
    }
    EXPECT_FALSE(run.phases[static_cast<size_t>(Phase::kReap)].counter_ms.has_value()) << "reap is the kernel's";
    EXPECT_NEAR(counter_percent, 100.0, 1e-6);
    EXPECT_GT(run.backend_cpu_seconds, 0);
    EXPECT_GT(run.summary.connections_per_second, 0) << "the summary is the cycle's";
  }
};

TEST_F(ProfileRunTest, WallClockCountsTheWait) {
  absl::StatusOr<ProfileRun> run = RunProfile(Options(profiling::SampleClock::kWall));
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectCountersAddUp(*run);
  EXPECT_TRUE(run->phases[kSampleTagWait].counter_ms.has_value()) << "on the wall clock the wait is measured";
  // 5 kHz of wall time over 20 backends' lives: samples in every run.
  int64_t samples = 0;
  double samples_percent = 0;
  for (const PhaseShare& p : run->phases) {
    samples += p.samples;
    samples_percent += p.samples_percent.value_or(0);
  }
  EXPECT_EQ(run->phases[static_cast<size_t>(Phase::kReap)].samples, 0) << "reap is after _exit";
  ASSERT_GT(run->phase_samples, 0);
  EXPECT_EQ(samples, run->phase_samples) << "every sample with a phase or wait tag is in one row";
  EXPECT_NEAR(samples_percent, 100.0, 1e-6);
  EXPECT_DOUBLE_EQ(run->samples_per_cpu_second, static_cast<double>(run->phase_samples) / run->backend_cpu_seconds);
  EXPECT_GE(run->processes, 2) << "the postmaster and its backends";
  EXPECT_GT(run->views.measured.total_samples(), 0);
  EXPECT_LE(run->views.measured.total_samples(), run->phase_samples) << "the backends' samples in a phase";
  EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty());
  EXPECT_TRUE(TmpdirIsEmpty());
}

TEST_F(ProfileRunTest, CpuClockLeavesTheWaitUnmeasured) {
  absl::StatusOr<ProfileRun> run = RunProfile(Options(profiling::SampleClock::kCpu));
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectCountersAddUp(*run);
  EXPECT_FALSE(run->phases[kSampleTagWait].counter_ms.has_value()) << "a waiting backend uses no CPU";
}

}  // namespace
}  // namespace backendlab::lifecycle
