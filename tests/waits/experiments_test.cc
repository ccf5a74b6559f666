// The two experiments run, measure what they say, count what is exact
// exactly, and leave no process behind.
#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "profiling/perf_events.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/skip.h"
#include "waits/latch_experiment.h"
#include "waits/waits_experiment.h"

namespace backendlab::waits {
namespace {

double Kind(const SyscallsPerOp& s, const std::string& name) {
  for (size_t i = 0; i < s.names.size(); ++i) {
    if (s.names[i] == name) return s.per_op[i];
  }
  return -1;
}

bool Counted() { return profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls).ok(); }

// After a test has checked what it could, where the kernel cannot count
// system calls: the test is reported skipped, with why, not passed.
#define SKIP_IF_UNCOUNTED()                                                                       \
  if (!Counted()) {                                                                              \
    BACKENDLAB_SKIP(test_util::SyscallCountsNeed())                                              \
        << "the rows ran and were checked, their exact system calls not: "                       \
        << profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls).message();          \
  }

TEST(LatchExperimentTest, EveryLatchPingPongsAndABusySetCostsWhatItShould) {
  LatchExperimentOptions o;
  o.rounds = 1;
  o.duration = absl::Milliseconds(20);
  o.counted_round_trips = 200;
  o.busy_sets = 500;
  absl::StatusOr<LatchExperimentResult> r = RunLatchExperiment(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), std::size(kAllLatches));
  EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty()) << "a child of the experiment is left";
  for (const LatchRow& row : r->rows) {
    SCOPED_TRACE(std::string(LatchName(row.latch)));
    EXPECT_GT(row.round_trips_per_second.median, 0);
    EXPECT_GT(row.round_trip_us.count, 0);
    EXPECT_GT(row.round_trip_us.median, 0);
    // One round: the ratio to the first latch is that round's quotient, with
    // no interval (it takes two rounds); the first's own is exactly 1.
    ASSERT_EQ(row.round_trips_per_second_by_round.size(), 1u);
    EXPECT_EQ(row.vs_baseline.rounds, 1);
    EXPECT_FALSE(row.vs_baseline.has_interval);
    EXPECT_EQ(row.vs_baseline.verdict, Verdict::kUndecided);
    EXPECT_NEAR(row.vs_baseline.ratio,
                row.round_trips_per_second_by_round[0] / r->rows[0].round_trips_per_second_by_round[0],
                1e-9 * row.vs_baseline.ratio);
    EXPECT_EQ(row.syscalls.has_value(), Counted()) << r->syscalls_status;
    if (!row.syscalls) continue;
    // A ping-pong round trip is two sets and two waits, and each side gives
    // the other its turn: it wakes it (kill, write, futex, ...) or sleeps,
    // at least once each per round trip, averaged over the counted ones.
    EXPECT_GE(row.syscalls->total, 2.0);
    // A SetLatch on an owner that is not asleep: the 2010 latches signal
    // it anyway (one kill per set); every later design sends nothing.
    const bool signals = row.latch == LatchKind::kSelfpipeSelect || row.latch == LatchKind::kSelfpipePoll;
    ASSERT_TRUE(row.busy_set_ns && row.busy_set_syscalls && row.busy_owner_syscalls);
    EXPECT_DOUBLE_EQ(row.busy_set_syscalls->total, signals ? 1.0 : 0.0);
    EXPECT_DOUBLE_EQ(Kind(*row.busy_set_syscalls, "kill"), signals ? 1.0 : 0.0);
    if (!signals) {
      EXPECT_DOUBLE_EQ(row.busy_owner_syscalls->total, 0.0);
    }
  }
  SKIP_IF_UNCOUNTED();
}

TEST(LatchExperimentTest, BadOptionsAreRefusedBeforeAnythingRuns) {
  LatchExperimentOptions o;
  o.latches = {LatchKind::kFutex, LatchKind::kFutex};
  EXPECT_EQ(RunLatchExperiment(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.cpus = {0, 1, 0};
  EXPECT_EQ(ValidateLatchOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o.cpus = {4096};
  EXPECT_EQ(ValidateLatchOptions(o).code(), absl::StatusCode::kInvalidArgument);
  // One CPU twice once pinned a busy owner beside its setter, and the run hung.
  o.cpus = {0, 0};
  EXPECT_EQ(ValidateLatchOptions(o).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateLatchOptions(o).message().find("`cpus`=0"), std::string::npos) << ValidateLatchOptions(o);
  EXPECT_FALSE(ParseCpus("0,x").ok());
  EXPECT_TRUE(ParseCpus("any")->empty());
  EXPECT_EQ(*ParseCpus("0,1"), (std::vector<int>{0, 1}));
}

// In the direct shape a per-call backend makes exactly one set per round
// trip; a long-lived one reads first and waits only when that found
// nothing, so its reads are its waits plus one, and it makes no set at all.
TEST(WaitsExperimentTest, EachStrategyWaitsAsItShould) {
  WaitsExperimentOptions o;
  o.pairs = {1, 3};
  o.rounds = 2;  // the fewest that give a paired ratio an interval
  o.duration = absl::Milliseconds(20);
  o.counted_round_trips = 300;
  absl::StatusOr<WaitsExperimentResult> r = RunWaitsExperiment(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), 8u);
  EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty()) << "a child of the experiment is left";
  for (const WaitsRow& row : r->rows) {
    SCOPED_TRACE(absl::StrCat(std::string(WaitStrategyName(row.strategy)), " x", row.pairs));
    EXPECT_GT(row.round_trips_per_second.median, 0);
    EXPECT_GT(row.round_trip_us.count, 0);
    EXPECT_EQ(row.round_trips_per_second_by_round.size(), 2u);
    ASSERT_TRUE(row.vs_long_lived.has_value());
    EXPECT_EQ(row.vs_long_lived->rounds, 2);
    if (row.strategy == WaitStrategy::kLongLived) {
      EXPECT_DOUBLE_EQ(row.vs_long_lived->ratio, 1.0);
      EXPECT_FALSE(row.vs_long_lived->has_interval);
    } else {
      // Paired: the geometric mean of the two rounds' ratios, inside its interval.
      const WaitsRow* base = nullptr;
      for (const WaitsRow& b : r->rows) {
        if (b.strategy == WaitStrategy::kLongLived && b.pairs == row.pairs) base = &b;
      }
      ASSERT_NE(base, nullptr);
      const std::vector<double>& a = row.round_trips_per_second_by_round;
      const std::vector<double>& l = base->round_trips_per_second_by_round;
      EXPECT_NEAR(row.vs_long_lived->ratio, std::sqrt(a[0] / l[0] * (a[1] / l[1])), 1e-9 * row.vs_long_lived->ratio);
      ASSERT_TRUE(row.vs_long_lived->has_interval);
      EXPECT_TRUE(row.vs_long_lived->interval.Covers(row.vs_long_lived->ratio));
    }
    EXPECT_EQ(row.syscalls.has_value(), Counted()) << r->syscalls_status;
    if (!row.syscalls) continue;
    const SyscallsPerOp& s = *row.syscalls;
    EXPECT_DOUBLE_EQ(Kind(s, "sendto"), 1.0);  // one answer per round trip
    switch (row.strategy) {
      case WaitStrategy::kPerCall:
        EXPECT_DOUBLE_EQ(Kind(s, "epoll_create1"), 1.0);
        EXPECT_DOUBLE_EQ(Kind(s, "epoll_ctl"), 3.0);
        EXPECT_DOUBLE_EQ(Kind(s, "epoll_wait"), 1.0);
        EXPECT_DOUBLE_EQ(Kind(s, "close"), 1.0);
        EXPECT_DOUBLE_EQ(Kind(s, "recvfrom"), 1.0);
        EXPECT_GT(row.close_us, 0);
        break;
      case WaitStrategy::kLongLived:
        EXPECT_DOUBLE_EQ(Kind(s, "epoll_create1"), 0.0);
        // Its one epoll_ctl (the socket from writable, as pq_init adds it, to
        // readable) comes with its first wait: in the warm-up, or — where
        // every read of the warm-up found its data, as under ASan — once
        // in the counted round trips.
        EXPECT_LE(Kind(s, "epoll_ctl"), 1.0 / static_cast<double>(o.counted_round_trips) + 1e-12);
        EXPECT_DOUBLE_EQ(Kind(s, "close"), 0.0);
        EXPECT_DOUBLE_EQ(Kind(s, "recvfrom"), Kind(s, "epoll_wait") + 1.0);
        EXPECT_DOUBLE_EQ(row.close_us, 0.0);
        break;
      case WaitStrategy::kCached:
        EXPECT_DOUBLE_EQ(Kind(s, "epoll_create1"), 0.0);
        EXPECT_DOUBLE_EQ(Kind(s, "epoll_ctl"), 1.0);
        EXPECT_DOUBLE_EQ(Kind(s, "epoll_wait"), 1.0);
        break;
      case WaitStrategy::kPoll:
        EXPECT_DOUBLE_EQ(Kind(s, "poll"), 1.0);
        EXPECT_DOUBLE_EQ(Kind(s, "close"), 0.0);
        break;
    }
  }
  SKIP_IF_UNCOUNTED();
}

// The postgres_fdw shape over loopback TCP: the backend waits for its
// client with the long-lived set and for the remote with the strategy.
TEST(WaitsExperimentTest, FdwShapeOverTcp) {
  WaitsExperimentOptions o;
  o.strategies = {WaitStrategy::kPerCall, WaitStrategy::kLongLived};
  o.pairs = {2};
  o.transport = Transport::kTcp;
  o.shape = Shape::kFdw;
  o.rounds = 1;
  o.duration = absl::Milliseconds(20);
  o.counted_round_trips = 200;
  absl::StatusOr<WaitsExperimentResult> r = RunWaitsExperiment(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty());
  for (const WaitsRow& row : r->rows) {
    EXPECT_GT(row.round_trips_per_second.median, 0);
    EXPECT_EQ(row.syscalls.has_value(), Counted()) << r->syscalls_status;
    if (!row.syscalls) continue;
    // Two sends per round trip: the request forwarded, the answer returned.
    EXPECT_DOUBLE_EQ(Kind(*row.syscalls, "sendto"), 2.0);
    if (row.strategy == WaitStrategy::kPerCall) {
      EXPECT_DOUBLE_EQ(Kind(*row.syscalls, "epoll_create1"), 1.0);
    }
  }
  SKIP_IF_UNCOUNTED();
}

TEST(WaitsExperimentTest, BadOptionsAreRefused) {
  WaitsExperimentOptions o;
  o.pairs = {0};
  EXPECT_EQ(ValidateWaitsOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o.pairs = {2, 2};
  EXPECT_EQ(ValidateWaitsOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o.pairs = {65};
  EXPECT_EQ(ValidateWaitsOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.strategies = {};
  EXPECT_EQ(ValidateWaitsOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.duration = absl::Milliseconds(5);
  EXPECT_EQ(ValidateWaitsOptions(o).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace backendlab::waits
