// The fit's arithmetic on synthetic servers with known answers: what a
// server weighs per connection, by group, from the real server's counters
// and profile and from the mock's records; the exit path chosen; and the
// refits, which move every knob toward the real server and reach it.
#include "calibrate/internal/fit.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace backendlab::calibrate::internal {
namespace {

size_t G(Group g) { return static_cast<size_t>(g); }

TEST(GroupOfRealPhaseTest, EveryPhaseWordHasItsGroupOrNone) {
  for (const char* p : {"accept", "fork", "startup", "auth", "init"}) EXPECT_EQ(GroupOfRealPhase(p), Group::kStartup) << p;
  EXPECT_EQ(GroupOfRealPhase("work"), Group::kWork);
  EXPECT_EQ(GroupOfRealPhase("exit"), Group::kExit);
  EXPECT_EQ(GroupOfRealPhase("kernel_exit"), Group::kKernelTeardown);
  EXPECT_EQ(GroupOfRealPhase("reap"), Group::kKernelTeardown);
  for (const char* p : {"postmaster_other", "aux", "unclaimed", "bogus"}) EXPECT_FALSE(GroupOfRealPhase(p)) << p;
}

// 100 connections served over two rounds (80 measured, 20 of warm-up), 4 s
// of server CPU: 40,000 us each, split as the profile's 200 samples are.
TEST(RealWeighingTest, PerConnectionServedAndGroupsAsTheSamplesSplit) {
  std::vector<ServerUsage> rounds(2);
  rounds[0].connections = 60;
  rounds[0].cpu_ns = 2'500'000'000;
  rounds[0].minor_faults = 40'000;
  rounds[0].syscalls = 3'000;
  rounds[0].syscalls_by_kind = {700, 200};
  rounds[1].connections = 40;
  rounds[1].cpu_ns = 1'500'000'000;
  rounds[1].minor_faults = 30'000;
  rounds[1].syscalls = 2'000;
  rounds[1].syscalls_by_kind = {500, 100};
  const std::vector<std::string> kinds = {"openat", "clock_gettime"};
  pgreal::ServerProfile profile;
  profile.server_samples = 200;
  profile.phases = {{"fork", 20}, {"init", 60}, {"work", 10}, {"exit", 60}, {"reap", 30}, {"aux", 10}, {"unclaimed", 10}};
  const Weighing w = RealWeighing(rounds, {40, 50, 60}, kinds, &profile);
  EXPECT_DOUBLE_EQ(w.connections_per_second, 50);
  EXPECT_DOUBLE_EQ(w.cpu_us, 40'000) << "the rounds merged, then per connection";
  EXPECT_DOUBLE_EQ(w.minor_faults, 700);
  EXPECT_DOUBLE_EQ(w.syscalls_by_kind.at("openat"), 12);
  // Every call less the phase clocks' (which the mock makes and a real
  // backend does not): (5000 - 300) / 100.
  EXPECT_DOUBLE_EQ(w.syscalls, 47);
  EXPECT_EQ(w.rounds.size(), 2u) << "the rounds are kept, for the paired ratios";
  EXPECT_DOUBLE_EQ(w.group_cpu_us[G(Group::kStartup)], 40'000 * 80.0 / 200);
  EXPECT_DOUBLE_EQ(w.group_cpu_us[G(Group::kWork)], 40'000 * 10.0 / 200);
  EXPECT_DOUBLE_EQ(w.group_cpu_us[G(Group::kExit)], 40'000 * 60.0 / 200);
  EXPECT_DOUBLE_EQ(w.group_cpu_us[G(Group::kKernelTeardown)], 40'000 * 30.0 / 200);
  // Shares are of the four groups (180 samples), not of every sample.
  EXPECT_DOUBLE_EQ(w.group_share[G(Group::kStartup)], 80.0 / 180);
  EXPECT_DOUBLE_EQ(w.group_share[G(Group::kExit)], 60.0 / 180);
  double sum = 0;
  for (double s : w.group_share) sum += s;
  EXPECT_NEAR(sum, 1, 1e-12);
  // Not profiled (the saturation check's server): the same totals, no groups.
  const Weighing totals = RealWeighing(rounds, {40, 50, 60}, kinds, nullptr);
  EXPECT_DOUBLE_EQ(totals.cpu_us, 40'000);
  EXPECT_DOUBLE_EQ(totals.minor_faults, 700);
  for (double us : totals.group_cpu_us) EXPECT_EQ(us, 0);
  for (double share : totals.group_share) EXPECT_EQ(share, 0);
  rounds[1].syscalls = -1;
  EXPECT_DOUBLE_EQ(RealWeighing(rounds, {1}, kinds, &profile).syscalls, -1) << "one round not counted: not counted";
}

// Mock over real, round by round: round 1's CPU ratio is 1.1 and round 2's
// 0.9, so the paired ratio is their geometric mean, sqrt(0.99); conn/s
// pairs the same way (higher is faster for the mock).
TEST(AgreementTest, MockOverRealPairedWithinRounds) {
  auto usage = [](int64_t connections, int64_t cpu_ns, int64_t faults) {
    ServerUsage u;
    u.connections = connections;
    u.cpu_ns = cpu_ns;
    u.minor_faults = faults;
    return u;
  };
  Weighing real, mock;
  real.rates = {100, 200};
  real.rounds = {usage(10, 10'000'000, 1'000), usage(10, 20'000'000, 2'000)};
  mock.rates = {150, 100};
  mock.rounds = {usage(10, 11'000'000, 1'000), usage(20, 36'000'000, 4'000)};
  const Agreement a = AgreementOf(mock, real);
  ASSERT_TRUE(a.cpu_us && a.rate && a.minor_faults);
  EXPECT_NEAR(a.cpu_us->ratio, std::sqrt(1.1 * 0.9), 1e-12);
  EXPECT_EQ(a.cpu_us->rounds, 2);
  EXPECT_TRUE(a.cpu_us->has_interval);
  EXPECT_TRUE(a.cpu_us->interval.Covers(a.cpu_us->ratio));
  EXPECT_NEAR(a.rate->ratio, std::sqrt(1.5 * 0.5), 1e-12);
  EXPECT_NEAR(a.minor_faults->ratio, 1.0, 1e-12) << "the same faults per connection in each round on both sides";
  EXPECT_FALSE(a.syscalls) << "not counted on either side: no ratio";
}

TEST(AgreementTest, TheGoalIsJudgedOnTheInterval) {
  RatioEstimate r;
  r.ratio = 1.02;
  r.has_interval = true;
  r.interval = {0.95, 1.08};
  EXPECT_EQ(RatioGoalOf(r), Goal::kMet) << "the whole interval within 10 %";
  r.interval = {0.85, 1.08};
  EXPECT_EQ(RatioGoalOf(r), Goal::kUnsure) << "it straddles 0.9";
  r.ratio = 1.25;
  r.interval = {1.15, 1.3};
  EXPECT_EQ(RatioGoalOf(r), Goal::kMissed) << "all of it above 1.1";
  r.has_interval = false;
  r.ratio = 1.05;
  EXPECT_EQ(RatioGoalOf(r), Goal::kMet) << "one round: the point decides";
  r.ratio = 0.8;
  EXPECT_EQ(RatioGoalOf(r), Goal::kMissed);
  EXPECT_EQ(ShareGoalOf(0.42, 0.38), Goal::kMet) << "4 points";
  EXPECT_EQ(ShareGoalOf(0.30, 0.38), Goal::kMissed) << "8 points";
}

// The mock's groups from its phases: start-up is fork and the three inits,
// exit is the exit check and teardown, kernel teardown is reap.
TEST(MockWeighingTest, GroupsAreTheMocksPhasesAndTotalsPerConnection) {
  using lifecycle::Phase;
  lifecycle::CycleResult r;
  r.server.connections = 50;
  r.server.cpu_ns = 500'000'000;
  r.server.minor_faults = 25'000;
  r.server.syscalls = 1'000;
  r.server.syscalls_by_kind = {100, 200};
  auto record = [&](Phase p, int64_t cpu_ns, int64_t faults) {
    r.backends.phases[static_cast<size_t>(p)].cpu_ns.Record(cpu_ns);
    r.backends.phases[static_cast<size_t>(p)].minor_faults.Record(faults);
  };
  record(Phase::kFork, 1'000'000, 10);
  record(Phase::kInitBuffers, 2'000'000, 20);
  record(Phase::kInitCatcache, 3'000'000, 30);
  record(Phase::kInitOther, 4'000'000, 40);
  record(Phase::kWork, 500'000, 5);
  record(Phase::kExitCheck, 250'000, 1);
  record(Phase::kTeardown, 750'000, 2);
  record(Phase::kReap, 2'000'000, 0);
  const std::vector<std::string> kinds = {"openat", "getrusage"};
  const Weighing w = MockWeighing(r, std::span(&r.server, 1), {10, 30}, kinds);
  EXPECT_DOUBLE_EQ(w.connections_per_second, 20);
  EXPECT_DOUBLE_EQ(w.cpu_us, 10'000);
  EXPECT_DOUBLE_EQ(w.minor_faults, 500);
  EXPECT_DOUBLE_EQ(w.syscalls, (1000.0 - 200) / 50) << "less the phase clocks' getrusage";
  EXPECT_DOUBLE_EQ(w.group_cpu_us[G(Group::kStartup)], 10'000);
  EXPECT_DOUBLE_EQ(w.group_cpu_us[G(Group::kWork)], 500);
  EXPECT_DOUBLE_EQ(w.group_cpu_us[G(Group::kExit)], 1'000);
  EXPECT_DOUBLE_EQ(w.group_cpu_us[G(Group::kKernelTeardown)], 2'000);
  EXPECT_DOUBLE_EQ(w.group_minor_faults[G(Group::kStartup)], 100);
  EXPECT_DOUBLE_EQ(w.group_minor_faults[G(Group::kExit)], 3);
}

Weighing WithExit(double exit_us, double exit_faults) {
  Weighing w;
  w.group_cpu_us = {1'000, 100, exit_us, 500};
  w.group_minor_faults = {0, 0, exit_faults, 0};
  Shares(w);
  return w;
}

TEST(ChooseExitPathTest, LibcsExitStaysUnlessTheMocksHandlersOutweighTheRealExit) {
  const Weighing real = WithExit(1'000, 0);
  const Weighing unweighted = WithExit(200, 10);
  {
    lifecycle::BackendWeight w;
    w.exit_path = lifecycle::ExitPath::kExit;
    std::vector<std::string> notes;
    const Weighing within = WithExit(1'090, 60);  // within 10 % of the real exit
    const Weighing start = ChooseExitPath(real, within, unweighted, w, notes);
    EXPECT_EQ(w.exit_path, lifecycle::ExitPath::kExit);
    EXPECT_DOUBLE_EQ(start.group_cpu_us[G(Group::kExit)], 1'090);
    EXPECT_TRUE(notes.empty());
  }
  {
    lifecycle::BackendWeight w;
    w.exit_path = lifecycle::ExitPath::kExit;
    std::vector<std::string> notes;
    const Weighing heavy = WithExit(1'700, 60);
    const Weighing start = ChooseExitPath(real, heavy, unweighted, w, notes);
    EXPECT_EQ(w.exit_path, lifecycle::ExitPath::kUnderscoreExit);
    EXPECT_DOUBLE_EQ(w.exit.cpu_us, 800) << "the real exit less what the unweighted mock's already costs";
    EXPECT_EQ(w.exit.touch_pages, 50) << "the handlers' faults, done as pages touched";
    EXPECT_DOUBLE_EQ(start.group_cpu_us[G(Group::kExit)], 1'000) << "the fit starts from the exit it will have";
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("exit path"), std::string::npos) << notes[0];
  }
}

// A mock whose response to the knobs is known: each touched page gives
// `page_yield` faults, each us of a group's weight `cpu_yield` us, and each
// weighed system call one call, on top of a base it has unweighted. The
// refits must move every knob toward the real server's figures and, for a
// linear response, get within a rounding of them.
struct SyntheticMock {
  double page_yield = 1.0;
  double cpu_yield = 1.0;
  Weighing base;
  Weighing Measure(const lifecycle::BackendWeight& w) const {
    Weighing m = base;
    m.minor_faults += page_yield * static_cast<double>(w.startup.touch_pages);
    m.group_cpu_us[G(Group::kStartup)] += cpu_yield * w.startup.cpu_us;
    m.group_cpu_us[G(Group::kWork)] += cpu_yield * w.work.cpu_us;
    m.group_cpu_us[G(Group::kExit)] += cpu_yield * w.exit.cpu_us;
    for (const auto& [kind, n] : w.startup.syscalls) m.syscalls_by_kind[kind] += static_cast<double>(n);
    Shares(m);
    return m;
  }
};

Weighing RealTarget() {
  Weighing real;
  real.minor_faults = 700;
  real.group_cpu_us = {20'000, 80, 11'000, 4'000};
  real.syscalls_by_kind = {{"openat", 40}, {"read", 30}, {"mmap", 12}};
  Shares(real);
  return real;
}

SyntheticMock MockOf(double page_yield, double cpu_yield) {
  SyntheticMock mock{page_yield, cpu_yield, {}};
  mock.base.minor_faults = 300;
  mock.base.group_cpu_us = {4'000, 90, 1'500, 3'000};  // work already heavier than the real one's
  mock.base.syscalls_by_kind = {{"openat", 10}, {"read", 30}, {"mmap", 20}};
  return mock;
}

double Gap(const Weighing& real, const Weighing& mock, Group g) {
  return std::abs(real.group_cpu_us[G(g)] - mock.group_cpu_us[G(g)]);
}

TEST(RefitTest, ALinearMockReachesTheRealServerInOneStep) {
  const Weighing real = RealTarget();
  const SyntheticMock mock = MockOf(1.0, 1.0);
  lifecycle::BackendWeight w;
  std::vector<std::string> notes;
  Refit(real, mock.Measure(w), w, notes, /*last=*/true);
  const Weighing after = mock.Measure(w);
  EXPECT_NEAR(after.minor_faults, real.minor_faults, 0.5);
  EXPECT_NEAR(after.group_cpu_us[G(Group::kStartup)], real.group_cpu_us[G(Group::kStartup)], 1e-9);
  EXPECT_NEAR(after.group_cpu_us[G(Group::kExit)], real.group_cpu_us[G(Group::kExit)], 1e-9);
  EXPECT_DOUBLE_EQ(after.syscalls_by_kind.at("openat"), 40);
  EXPECT_EQ(w.startup.syscalls.count("read"), 0u) << "nothing missing, nothing added";
  EXPECT_EQ(w.startup.syscalls.count("mmap"), 0u) << "the mock's extra calls cannot be taken away";
  // Work: the mock already spends more; the knob stays at zero and says so.
  EXPECT_DOUBLE_EQ(w.work.cpu_us, 0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("work already costs 10 us more"), std::string::npos) << notes[0];
}

// A mock that gives less than it is asked (a page touched faults 0.8 times,
// a us of weight costs 0.7): every refit closes part of the gap, never
// overshoots, and after eight the gaps are under 1 % of the target.
TEST(RefitTest, EveryStepMovesTowardTheRealServerWhenTheMockRespondsLess) {
  const Weighing real = RealTarget();
  const SyntheticMock mock = MockOf(0.8, 0.7);
  lifecycle::BackendWeight w;
  std::vector<std::string> notes;
  double faults_gap = real.minor_faults - mock.Measure(w).minor_faults;
  double startup_gap = Gap(real, mock.Measure(w), Group::kStartup);
  double exit_gap = Gap(real, mock.Measure(w), Group::kExit);
  for (int step = 0; step < 8; ++step) {
    SCOPED_TRACE(step);
    Refit(real, mock.Measure(w), w, notes, step == 7);
    const Weighing now = mock.Measure(w);
    const double faults_now = real.minor_faults - now.minor_faults;
    EXPECT_GE(faults_now, -0.5) << "no overshoot of the faults";
    EXPECT_LT(std::abs(faults_now), std::abs(faults_gap) + 0.5);
    EXPECT_LT(Gap(real, now, Group::kStartup), startup_gap);
    EXPECT_LT(Gap(real, now, Group::kExit), exit_gap);
    faults_gap = faults_now;
    startup_gap = Gap(real, now, Group::kStartup);
    exit_gap = Gap(real, now, Group::kExit);
  }
  EXPECT_LT(std::abs(faults_gap), 0.01 * real.minor_faults);
  EXPECT_LT(startup_gap, 0.01 * real.group_cpu_us[G(Group::kStartup)]);
  EXPECT_LT(exit_gap, 0.01 * real.group_cpu_us[G(Group::kExit)]);
}

// The mock faulting more than the real server: nothing to add, the knob at
// zero, and the last step says by how much.
TEST(RefitTest, AMockThatFaultsMoreIsLeftAloneAndSaidSo) {
  Weighing real = RealTarget();
  real.minor_faults = 200;
  const SyntheticMock mock = MockOf(1.0, 1.0);
  lifecycle::BackendWeight w;
  std::vector<std::string> notes;
  Refit(real, mock.Measure(w), w, notes, /*last=*/true);
  EXPECT_EQ(w.startup.touch_pages, 0);
  bool said = false;
  for (const std::string& n : notes) said = said || n.find("faults 100 more pages") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(notes);
}

}  // namespace
}  // namespace backendlab::calibrate::internal
