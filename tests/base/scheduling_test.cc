// The scheduling hold: the thread at SCHED_RR 1 while it lives, inherited by
// what it starts, restored after; refused without the privilege, and said.
#include "base/scheduling.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

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
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: setuid, 12: granted, 13: the reason's wording, 14: the policy";
}

TEST(SchedulingTest, NamesParseBack) {
  for (const Scheduling s : ValuesOf(kSchedulingNames)) EXPECT_EQ(*ParseScheduling(SchedulingName(s)), s);
  EXPECT_FALSE(ParseScheduling("fifo").ok());
}

}  // namespace
}  // namespace backendlab
