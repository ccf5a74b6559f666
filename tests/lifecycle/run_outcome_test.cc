// RunOutcome: how a finished cycle's result becomes the command's exit status.
#include "lifecycle/cycle_summary.h"

#include <signal.h>

#include <string>

#include "gtest/gtest.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/cycle.h"

namespace backendlab::lifecycle {
namespace {

CycleResult Clean() {
  CycleResult r;
  r.connections = 10;
  return r;
}

TEST(RunOutcomeTest, ACleanRunIsOk) {
  const CycleResult r = Clean();
  EXPECT_TRUE(RunOutcome(r, Summarize(r)).ok());
}

TEST(RunOutcomeTest, AStoppedRunIsCancelled) {
  CycleResult r = Clean();
  r.interrupted = true;
  r.backends.stopped = 1;  // the stop signal reached the process group
  EXPECT_TRUE(absl::IsCancelled(RunOutcome(r, Summarize(r))));
}

// A backend killed by SIGTERM while the tool itself was not asked to stop was
// killed from outside: the run failed, it must not exit 0 a backend short.
TEST(RunOutcomeTest, ABackendStoppedFromOutsideFailsTheRun) {
  CycleResult r = Clean();
  r.backends.stopped = 1;
  const absl::Status s = RunOutcome(r, Summarize(r));
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_NE(std::string(s.message()).find("stop signal"), std::string::npos) << s;
}

TEST(RunOutcomeTest, CrashesAndFailedConnectionsFailTheRun) {
  CycleResult warmup = Clean();
  warmup.backends.warmup_crashed = 1;
  EXPECT_TRUE(absl::IsAborted(RunOutcome(warmup, Summarize(warmup))));
  CycleResult failed = Clean();
  failed.failed_connections = 2;
  EXPECT_TRUE(absl::IsAborted(RunOutcome(failed, Summarize(failed))));
  CycleResult none;
  EXPECT_TRUE(absl::IsAborted(RunOutcome(none, Summarize(none))));
}

// A backend's record as its postmaster completes it: `wait_status` as
// waitpid gives it, its work phase done.
BackendRecord Ended(int32_t pid, int64_t sequence, int wait_status) {
  BackendRecord r;
  r.sequence = sequence;
  r.phases_done = 1u << static_cast<int>(Phase::kWork);
  CompleteRecord({.pid = pid, .wait_status = wait_status, .usage = nullptr, .forked = false, .fork_parent_cost = {}, .reaped_ns = 1},
                 r);
  return r;
}

// A backend that ended on an error it printed (its exit status 3) failed:
// the run fails, naming it, and nothing calls it a crash.
TEST(RunOutcomeTest, ABackendThatEndedOnItsOwnErrorFailedAndDidNotCrash) {
  const BackendRecord failed = Ended(321, 4, 3 << 8);
  EXPECT_NE(failed.outcome, BackendOutcome::kCrashed);
  CycleResult r = Clean();
  r.backends.AddMeasured(failed);
  EXPECT_EQ(r.backends.crashed, 0);
  const absl::Status s = RunOutcome(r, Summarize(r));
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_EQ(std::string(s.message()).find("crash"), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("backend 321 (connection 4)"), std::string::npos) << s;
}

// The failing line names the crashed backend, how it died and after which
// phase, wherever the report's own incident lines went (stdout).
TEST(RunOutcomeTest, TheFailingLineNamesTheFirstCrashedBackend) {
  CycleResult r = Clean();
  r.backends.AddMeasured(Ended(123, 7, SIGKILL));
  r.backends.AddMeasured(Ended(124, 8, SIGKILL));
  const absl::Status s = RunOutcome(r, Summarize(r));
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  const std::string message(s.message());
  EXPECT_NE(message.find("2 backends crashed"), std::string::npos) << message;
  EXPECT_NE(message.find("backend 123 (connection 7) crashed: killed by signal 9"), std::string::npos) << message;
  EXPECT_NE(message.find("after work"), std::string::npos) << message;
  EXPECT_EQ(message.find("see above"), std::string::npos) << message;
}

}  // namespace
}  // namespace backendlab::lifecycle
