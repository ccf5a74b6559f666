// lifecycle::RunCycle with the sampler: samples come back from every measured
// backend (not the warm-up ones) and the postmaster, each tagged with the
// phase it was taken in. Runs at a high frequency, so that the asan preset
// exercises the handler on the whole fork/exit loop.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "buffers/shared_buffers.h"
#include "gtest/gtest.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/cycle.h"
#include "profiling/perf_events.h"
#include "profiling/sampler.h"
#include "profiling/symbolizer.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/temp_dir.h"

namespace backendlab::lifecycle {
namespace {

using profiling::RawSample;

class CycleSamplingTest : public test_util::PrivateTmpdirTest {
 protected:
  // The exit check's own code: the scan kernels and the check itself run in
  // no other phase.
  static bool InExitCheckCode(profiling::Symbolizer& symbolizer, const RawSample& s) {
    for (int i = 0; i < s.depth; ++i) {
      const std::string& name = symbolizer.Name(s.pcs[i], i > 0);
      if (name.find("FindByte") != std::string::npos || name.find("RunExitCheck") != std::string::npos) return true;
    }
    return false;
  }

  static CycleOptions Options(Mode mode) {
    CycleOptions o;
    o.mode = mode;
    o.backend.layout = buffers::Layout::kArray;
    o.backend.exit_check = buffers::ExitCheckPolicy::kAlways;
    absl::StatusOr<buffers::SharedBuffers> size = buffers::ParseSharedBuffers("1GB");
    BACKENDLAB_CHECK(size.ok());
    o.backend.shared_buffers = *size;
    o.backend.work_lookups = 10;
    o.connections = 30;
    o.warmup = 3;
    o.baseline_forks = 5;
    o.sampler = profiling::SamplerOptions{
        .frequency_hz = 10'000, .clock = profiling::SampleClock::kWall, .unwinder = profiling::Unwinder::kLibunwind};
    return o;
  }
};

TEST_F(CycleSamplingTest, ForkModeSamplesEveryMeasuredBackendAndTagsItsPhases) {
  CycleOptions o = Options(Mode::kFork);
  std::vector<BackendRecord> result_records;
  o.on_record = [&](const BackendRecord& r) { result_records.push_back(r); };
  absl::StatusOr<CycleResult> result = RunCycle(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
  // (The postmaster's buffer may fill at this rate in a slow build: that is
  // counted in samples_dropped, tested in profiling/sampler_test.cc.)

  std::set<int32_t> measured;
  for (const BackendRecord& r : result_records) measured.insert(r.pid);
  std::set<int32_t> sampled_backends;
  std::map<int32_t, int64_t> by_tag;
  int64_t postmaster = 0, exit_check_code = 0;
  profiling::Symbolizer symbolizer;
  for (const RawSample& s : result->samples) {
    ASSERT_GE(s.depth, 1);
    if (s.pid == result->postmaster_pid) {
      ++postmaster;
      EXPECT_TRUE(s.tag == kSampleTagPostmaster || s.tag == static_cast<int32_t>(Phase::kFork))
          << "the postmaster is tagged postmaster, or fork while it forks: " << SampleTagName(s.tag);
      for (int i = 0; i < s.depth; ++i) {
        const std::string& name = symbolizer.Name(s.pcs[i], i > 0);
        EXPECT_EQ(name.find("SendBaseline"), std::string::npos) << "the bare forks before and after are not the run";
        EXPECT_EQ(name.find("BareFork"), std::string::npos);
      }
    } else {
      EXPECT_TRUE(measured.contains(s.pid)) << "pid " << s.pid << " is no measured backend (a warm-up one?)";
      sampled_backends.insert(s.pid);
      ++by_tag[s.tag];
    }
    if (InExitCheckCode(symbolizer, s)) {
      ++exit_check_code;
      EXPECT_EQ(s.tag, static_cast<int32_t>(Phase::kExitCheck)) << "exit-check code sampled under " << SampleTagName(s.tag);
    }
  }
  // 10 kHz of wall time: every backend lives for milliseconds.
  EXPECT_GE(sampled_backends.size(), measured.size() * 8 / 10) << "samples of most backends must reach the postmaster";
  EXPECT_GT(postmaster, 0);
  EXPECT_GT(exit_check_code, 0) << "array/always at 1GB scans 128 kB per backend";
  EXPECT_GT(by_tag[static_cast<int32_t>(Phase::kExitCheck)], 0);
  EXPECT_GT(by_tag[kSampleTagWait], 0) << "the wall clock samples a backend waiting for its client";
  EXPECT_EQ(by_tag.count(kSampleTagPostmaster), 0u);
  EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty());
  EXPECT_TRUE(TmpdirIsEmpty()) << "the sample file must not outlive the run";
  EXPECT_FALSE(profiling::Sampler::Running());
}

TEST_F(CycleSamplingTest, InprocModeSamplesThisProcessAndStopsAfterward) {
  CycleOptions o = Options(Mode::kInproc);
  absl::StatusOr<CycleResult> result = RunCycle(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(result->samples.empty());
  EXPECT_FALSE(profiling::Sampler::Running()) << "the run must stop the sampler it started";
  std::map<int32_t, int64_t> by_tag;
  profiling::Symbolizer symbolizer;
  for (const RawSample& s : result->samples) {
    EXPECT_EQ(s.pid, getpid());
    ++by_tag[s.tag];
    if (InExitCheckCode(symbolizer, s)) {
      EXPECT_EQ(s.tag, static_cast<int32_t>(Phase::kExitCheck));
    }
  }
  EXPECT_GT(by_tag[static_cast<int32_t>(Phase::kExitCheck)], 0);
  EXPECT_EQ(by_tag.count(static_cast<int32_t>(Phase::kFork)), 0u) << "inproc has no fork";
  struct sigaction now {};
  sigaction(SIGPROF, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL) << "the handler must be gone after the run";
}

// --counters: each event either counts in every measured phase of every
// backend, or is missing everywhere and named with the kernel's reason, and
// the run goes on either way (hardware events on a VM).
TEST_F(CycleSamplingTest, PerfCountersCountPerPhaseOrSayWhyNot) {
  CycleOptions o = Options(Mode::kFork);
  o.sampler.reset();
  o.connections = 10;
  o.backend.counters = {profiling::PerfEvent::kTaskClock, profiling::PerfEvent::kPageFaults,
                        profiling::PerfEvent::kContextSwitches, profiling::PerfEvent::kCycles,
                        profiling::PerfEvent::kInstructions};
  std::vector<BackendRecord> result_records;
  o.on_record = [&](const BackendRecord& r) { result_records.push_back(r); };
  absl::StatusOr<CycleResult> result = RunCycle(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result_records.size(), 10u);
  for (profiling::PerfEvent e : o.backend.counters) {
    const std::string name(profiling::PerfEventName(e));
    SCOPED_TRACE(name);
    const bool available = profiling::PerfEventAvailability(e).ok();
    int named = 0;
    for (const absl::Status& why : result->counters_unavailable) named += std::string(why.message()).starts_with(name + ":");
    EXPECT_EQ(named, available ? 0 : 1) << "an unavailable event is reported once, by name";
    for (const BackendRecord& r : result_records) {
      for (Phase p : {Phase::kInitBuffers, Phase::kInitCatcache, Phase::kWork, Phase::kExitCheck, Phase::kTeardown}) {
        const PhaseCounters& c = r.phase[static_cast<int>(p)];
        const int64_t v = c.events[static_cast<int>(e)];
        if (!available) {
          EXPECT_EQ(v, -1) << PhaseName(p);
          continue;
        }
        EXPECT_GE(v, 0) << PhaseName(p);
        // Two counters of the same faults: perf's software event and getrusage.
        // (Counted in user mode only, under perf_event_paranoid 2 without
        // root, perf misses faults taken in system calls: compare as root.)
        if (e == profiling::PerfEvent::kPageFaults && geteuid() == 0) {
          EXPECT_NEAR(static_cast<double>(v), static_cast<double>(c.minor_faults + c.major_faults), 2) << PhaseName(p);
        }
      }
      // The array's exit scan at 1GB touches 128 kB: it must fault and take CPU.
      const PhaseCounters& exit = r.phase[static_cast<int>(Phase::kExitCheck)];
      if (available && (e == profiling::PerfEvent::kPageFaults || e == profiling::PerfEvent::kTaskClock)) {
        EXPECT_GT(exit.events[static_cast<int>(e)], 0);
      }
    }
  }
  EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty());
}

// Every perf_event_open of the run, in any process, counted in shared memory.
std::atomic<int>* g_opens = nullptr;
long CountingRefusingOpen(perf_event_attr*, pid_t, int, int, unsigned long) {
  g_opens->fetch_add(1);
  errno = ENOENT;
  return -1;
}

TEST_F(CycleSamplingTest, RefusedCountersAreProbedOnceNotInEveryBackend) {
  void* shared = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  g_opens = new (shared) std::atomic<int>(0);
  profiling::SetPerfEventOpenForTesting(&CountingRefusingOpen);
  CycleOptions o = Options(Mode::kFork);
  o.sampler.reset();
  o.connections = 10;
  o.backend.counters = {profiling::PerfEvent::kCycles};
  absl::StatusOr<CycleResult> result = RunCycle(o);
  profiling::SetPerfEventOpenForTesting(nullptr);
  const int opens = g_opens->load();
  munmap(shared, sizeof(std::atomic<int>));
  g_opens = nullptr;
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(opens, 1) << "one probe before the forks; backends inherit the answer";
  ASSERT_EQ(result->counters_unavailable.size(), 1u);
  EXPECT_TRUE(std::string(result->counters_unavailable[0].message()).starts_with("cycles: unavailable: ")) << result->counters_unavailable[0];
}

TEST(SampleTagNameTest, NamesPhasesAndRoles) {
  EXPECT_EQ(SampleTagName(static_cast<int32_t>(Phase::kExitCheck)), "exit_check");
  EXPECT_EQ(SampleTagName(kSampleTagWait), "wait");
  EXPECT_EQ(SampleTagName(kSampleTagPostmaster), "postmaster");
  EXPECT_EQ(SampleTagName(kSampleTagClient), "client");
  EXPECT_EQ(SampleTagName(99), "tag99");
}

}  // namespace
}  // namespace backendlab::lifecycle
