// RunOutcome: how a finished cycle's result becomes the command's exit status.
#include "lifecycle/cycle_summary.h"

#include "gtest/gtest.h"
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

}  // namespace
}  // namespace backendlab::lifecycle
