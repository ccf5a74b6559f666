#include "base/scheduling.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/cpus.h"

namespace backendlab {
namespace {

// A spinner, in the forked child. System calls only: the parent may have had
// other threads when it forked. SCHED_IDLE first: the child was forked at
// SCHED_RR and must never spin there, so any failure exits at once. A plain
// loop, no pause instruction: a virtual machine's hypervisor may take a
// pause loop for a vCPU waiting on a lock and exit to the host for it.
[[noreturn]] void Spin(int cpu, pid_t parent) {
  const sched_param none{.sched_priority = 0};
  if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) _exit(1);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
  prctl(PR_SET_NAME, kSpinnerName.data());
  close_range(0, ~0U, 0);  // holds no pipe or socket of the tool's open
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &dfl, nullptr);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) _exit(1);
  for (;;) asm volatile("" ::: "memory");
}

}  // namespace

SchedulingHold::SchedulingHold(Scheduling asked) {
  outcome_.asked = asked;
  if (asked == Scheduling::kNormal) return;
  old_policy_ = sched_getscheduler(0);
  if (old_policy_ < 0 || sched_getparam(0, &old_param_) != 0) {
    outcome_.refused = absl::StrCat("sched_getscheduler: ", std::strerror(errno));
    return;
  }
  // SCHED_RESET_ON_FORK stays clear: what this thread starts inherits it.
  const sched_param param{.sched_priority = kRealtimePriority};
  if (sched_setscheduler(0, kRealtimePolicy, &param) != 0) {
    outcome_.refused = absl::StrCat("sched_setscheduler(SCHED_RR, ", kRealtimePriority, "): ", std::strerror(errno));
    return;
  }
  outcome_.granted = asked;
  if (asked != Scheduling::kSpin) return;
  const pid_t self = getpid();
  for (int cpu : AllowedCpus()) {
    const pid_t pid = fork();
    if (pid == 0) Spin(cpu, self);
    if (pid > 0) spinners_.push_back(pid);
  }
  outcome_.spinners = static_cast<int>(spinners_.size());
}

SchedulingHold::~SchedulingHold() {
  for (pid_t pid : spinners_) kill(pid, SIGKILL);
  for (pid_t pid : spinners_) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (outcome_.granted == Scheduling::kNormal) return;
  // Back to what the thread had; lowering one's own policy needs no privilege.
  sched_setscheduler(0, old_policy_, &old_param_);
}

}  // namespace backendlab
