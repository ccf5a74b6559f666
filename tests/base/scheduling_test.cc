// The scheduling hold: the thread at SCHED_RR 1 while it lives, inherited by
// what it starts, restored after; refused without the privilege, and said.
#include "base/scheduling.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/cpus.h"
#include "base/processes.h"
#include "gtest/gtest.h"

namespace backendlab {
namespace {

TEST(SchedulingTest, NormalChangesNothing) {
  const int before = sched_getscheduler(0);
  const SchedulingHold hold(Scheduling::kNormal);
  EXPECT_EQ(hold.outcome().asked, Scheduling::kNormal);
  EXPECT_EQ(hold.outcome().granted, Scheduling::kNormal);
  EXPECT_EQ(hold.outcome().refused, "");
  EXPECT_EQ(sched_getscheduler(0), before);
}

// A forked child's policy, as its exit status: what a postmaster started
// under the hold runs at.
int ChildPolicy() {
  const pid_t pid = fork();
  if (pid == 0) _exit(sched_getscheduler(0));
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(SchedulingTest, RealtimeHoldsTheThreadAndWhatItStartsThenRestores) {
  const int before = sched_getscheduler(0);
  ASSERT_EQ(before, SCHED_OTHER) << "the test runs at the kernel's default";
  {
    const SchedulingHold hold(Scheduling::kRealtime);
    if (hold.outcome().granted != Scheduling::kRealtime) {
      ASSERT_NE(hold.outcome().refused, "");
      GTEST_SKIP() << "the kernel refused realtime scheduling here: " << hold.outcome().refused;
    }
    EXPECT_EQ(hold.outcome().refused, "");
    EXPECT_EQ(sched_getscheduler(0), SCHED_RR);
    sched_param param{};
    ASSERT_EQ(sched_getparam(0, &param), 0);
    EXPECT_EQ(param.sched_priority, kRealtimePriority);
    EXPECT_EQ(hold.outcome().spinners, 0);
    EXPECT_TRUE(ChildrenOf(getpid()).empty()) << "no spinner: that is spin's";
    EXPECT_EQ(ChildPolicy(), SCHED_RR) << "a forked process inherits it";
    int thread_policy = -1;
    std::thread([&] { thread_policy = sched_getscheduler(0); }).join();
    EXPECT_EQ(thread_policy, SCHED_RR) << "a thread started under it inherits it";
  }
  EXPECT_EQ(sched_getscheduler(0), before) << "restored when the hold goes";
  EXPECT_EQ(ChildPolicy(), SCHED_OTHER);
}

// Without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 the kernel refuses: the
// hold says why and leaves the thread as it was. In a child, which gives up
// the privilege for good: as root by becoming nobody.
TEST(SchedulingTest, ARefusalIsSaidAndChangesNothing) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit none{0, 0};
    if (setrlimit(RLIMIT_RTPRIO, &none) != 0) _exit(10);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(11);
    const SchedulingHold hold(Scheduling::kRealtime);
    if (hold.outcome().granted != Scheduling::kNormal) _exit(12);
    if (hold.outcome().refused.find("sched_setscheduler(SCHED_RR, 1): ") != 0) _exit(13);
    if (sched_getscheduler(0) != SCHED_OTHER) _exit(14);
    if (hold.outcome().spinners != 0) _exit(15);
    const SchedulingHold spin(Scheduling::kSpin);
    if (spin.outcome().granted != Scheduling::kNormal || spin.outcome().spinners != 0) _exit(16);
    if (!ChildrenOf(getpid()).empty()) _exit(17);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: setuid, 12: granted, 13: the reason's wording, 14: the policy, 15: spinners, 16: spin granted, 17: a spinner started";
}

std::string Comm(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The CPUs a process may run on, as a list.
std::vector<int> AffinityOf(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(pid, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Spin is realtime and every allowed CPU kept awake: one spinner process
// per CPU, pinned there, at SCHED_IDLE, named, holding no descriptor of the
// test's; all of them killed and reaped when the hold goes.
TEST(SchedulingTest, SpinKeepsEveryAllowedCpuAwakeAndLeavesNothing) {
  ASSERT_TRUE(ChildrenOf(getpid()).empty());
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  std::vector<pid_t> spinners;
  {
    const SchedulingHold hold(Scheduling::kSpin);
    if (hold.outcome().granted != Scheduling::kSpin) {
      EXPECT_EQ(hold.outcome().spinners, 0);
      GTEST_SKIP() << "the kernel refused realtime scheduling here: " << hold.outcome().refused;
    }
    EXPECT_EQ(sched_getscheduler(0), SCHED_RR);
    EXPECT_EQ(hold.outcome().spinners, static_cast<int>(allowed.size()));
    spinners = ChildrenOf(getpid());
    ASSERT_EQ(spinners.size(), allowed.size());
    std::set<int> pinned;
    for (pid_t pid : spinners) {
      SCOPED_TRACE(testing::Message() << "spinner " << pid);
      // Pinning is the spinner's last step before it spins: wait for it.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (AffinityOf(pid).size() != 1 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      const std::vector<int> cpus = AffinityOf(pid);
      ASSERT_EQ(cpus.size(), 1u) << "never pinned to one CPU";
      pinned.insert(cpus[0]);
      EXPECT_EQ(sched_getscheduler(pid), SCHED_IDLE);
      EXPECT_EQ(Comm(pid), kSpinnerName);
      const std::filesystem::path fds = "/proc/" + std::to_string(pid) + "/fd";
      EXPECT_TRUE(std::filesystem::is_empty(fds)) << "a spinner keeps no descriptor open";
    }
    EXPECT_EQ(pinned, std::set<int>(allowed.begin(), allowed.end())) << "one spinner on each allowed CPU";
  }
  for (pid_t pid : spinners) {
    EXPECT_EQ(kill(pid, 0), -1) << "spinner " << pid << " outlived the hold";
    EXPECT_EQ(errno, ESRCH) << "and it was reaped, not left a zombie";
  }
  EXPECT_TRUE(ChildrenOf(getpid()).empty());
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "restored when the hold goes";
}

TEST(SchedulingTest, NamesParseBack) {
  for (const Scheduling s : ValuesOf(kSchedulingNames)) EXPECT_EQ(*ParseScheduling(SchedulingName(s)), s);
  EXPECT_FALSE(ParseScheduling("fifo").ok());
}

}  // namespace
}  // namespace backendlab
