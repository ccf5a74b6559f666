#include "base/scheduling.h"

#include <errno.h>
#include <sched.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace backendlab {

SchedulingHold::SchedulingHold(Scheduling asked) {
  outcome_.asked = asked;
  if (asked != Scheduling::kRealtime) return;
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
  outcome_.granted = Scheduling::kRealtime;
}

SchedulingHold::~SchedulingHold() {
  if (outcome_.granted != Scheduling::kRealtime) return;
  // Back to what the thread had; lowering one's own policy needs no privilege.
  sched_setscheduler(0, old_policy_, &old_param_);
}

}  // namespace backendlab
