// How the measured processes are scheduled: at the kernel's default policy,
// or above every ordinary process. A wall-clock rate at one client in
// flight passes from the client to the postmaster to a backend and back at
// every connection, each hand-over a wake-up; beside other load each of
// those waits for a core, and the round's rate becomes how the scheduler
// treated them. A real-time policy lets every wake-up of the measured
// processes take a core from an ordinary one at once, so the rate is the
// processes' own again; the CPU they use is the same.
//
// Which processes: the calling thread, and every process and thread it
// starts while the hold lives (they inherit the policy), so the client, the
// servers started after it and their backends. Round-robin at the lowest
// real-time priority, so the kernel's own real-time threads still come
// first, and the kernel's real-time throttling (sched_rt_runtime_us) still
// leaves ordinary processes their share of a core that is busy throughout.
//
// spin is realtime with every CPU kept awake besides: every CPU the thread
// may run on gets a spinner, a process of its own pinned there at
// SCHED_IDLE in a busy loop, so that no CPU of the run goes idle. SCHED_IDLE
// runs only where nothing else wants the CPU: every ordinary process and
// every measured one takes it at once. Whether that helps is the machine's:
// a CPU that idles halts, and on a virtual machine waking it again can be a
// round trip through the hypervisor at every hand-over, which a busy CPU
// avoids; but preempting a busy CPU takes an interrupt too, and on one
// 2-vCPU VM that slowed a cross-CPU hand-over 2.4-3.1 times where on
// another the spinners halved a round's spread (docs/compare.md, "Beside other load"). So it is asked
// for, not the default. The price: the CPUs are busy for the run's length.
#ifndef BACKENDLAB_BASE_SCHEDULING_H_
#define BACKENDLAB_BASE_SCHEDULING_H_

#include <sched.h>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/names.h"

namespace backendlab {

enum class Scheduling { kNormal, kRealtime, kSpin };
inline constexpr NamedValue<Scheduling> kSchedulingNames[] = {
    {Scheduling::kNormal, "normal"}, {Scheduling::kRealtime, "realtime"}, {Scheduling::kSpin, "spin"}};
inline std::string_view SchedulingName(Scheduling s) { return NameOf(s, kSchedulingNames); }
inline absl::StatusOr<Scheduling> ParseScheduling(std::string_view name) {
  return ParseName(name, kSchedulingNames, "scheduling");
}

// The policy and priority realtime asks for.
inline constexpr int kRealtimePolicy = SCHED_RR;
inline constexpr int kRealtimePriority = 1;

// Holds the calling thread at `asked` while it lives (spin: its spinners
// too), and restores the thread's own policy and priority after, the
// spinners killed and reaped. realtime (and spin) may be refused (no
// CAP_SYS_NICE and no RLIMIT_RTPRIO, a container's or cgroup's limit): the
// thread then stays as it was and outcome().refused says why, for the report to
// say once. Hold it on the thread that starts what is measured, before it
// starts it.
struct SchedulingOutcome {
  Scheduling asked = Scheduling::kNormal;
  Scheduling granted = Scheduling::kNormal;  // realtime or spin only where asked and granted
  // Why realtime was refused ("sched_setscheduler(SCHED_RR, 1): Operation
  // not permitted"); empty when it was not asked or was granted.
  std::string refused;
  // CPUs kept awake by a spinner each (granted spin only; 0 otherwise).
  int spinners = 0;
};

class SchedulingHold {
 public:
  explicit SchedulingHold(Scheduling asked);
  ~SchedulingHold();
  SchedulingHold(const SchedulingHold&) = delete;
  SchedulingHold& operator=(const SchedulingHold&) = delete;

  const SchedulingOutcome& outcome() const { return outcome_; }

 private:
  SchedulingOutcome outcome_;
  int old_policy_ = SCHED_OTHER;
  sched_param old_param_{};
  std::vector<pid_t> spinners_;  // killed and reaped when the hold goes
};

// The spinners' name in /proc/PID/comm (ps, top), for a reader to tell them.
inline constexpr std::string_view kSpinnerName = "backendlab-spin";

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_SCHEDULING_H_
