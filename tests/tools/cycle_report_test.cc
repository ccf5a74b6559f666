// RunOutcome: how a finished cycle's result becomes the command's exit status.
#include "tools/cycle_report.h"

#include "gtest/gtest.h"
#include "lifecycle/cycle.h"
#include "lifecycle/cycle_summary.h"

namespace backendlab::tools {
namespace {

lifecycle::CycleResult Clean() {
  lifecycle::CycleResult r;
  r.connections = 10;
  return r;
}

TEST(RunOutcomeTest, ACleanRunIsOk) {
  const lifecycle::CycleResult r = Clean();
  EXPECT_TRUE(RunOutcome(r, lifecycle::Summarize(r)).ok());
}

TEST(RunOutcomeTest, AStoppedRunIsCancelled) {
  lifecycle::CycleResult r = Clean();
  r.interrupted = true;
  r.backends.stopped = 1;  // the stop signal reached the process group
  EXPECT_TRUE(absl::IsCancelled(RunOutcome(r, lifecycle::Summarize(r))));
}

// A backend killed by SIGTERM while the tool itself was not asked to stop was
// killed from outside: the run failed, it must not exit 0 a backend short.
TEST(RunOutcomeTest, ABackendStoppedFromOutsideFailsTheRun) {
  lifecycle::CycleResult r = Clean();
  r.backends.stopped = 1;
  const absl::Status s = RunOutcome(r, lifecycle::Summarize(r));
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_NE(std::string(s.message()).find("stop signal"), std::string::npos) << s;
}

TEST(RunOutcomeTest, CrashesAndFailedConnectionsFailTheRun) {
  lifecycle::CycleResult warmup = Clean();
  warmup.backends.warmup_crashed = 1;
  EXPECT_TRUE(absl::IsAborted(RunOutcome(warmup, lifecycle::Summarize(warmup))));
  lifecycle::CycleResult failed = Clean();
  failed.failed_connections = 2;
  EXPECT_TRUE(absl::IsAborted(RunOutcome(failed, lifecycle::Summarize(failed))));
  lifecycle::CycleResult none;
  EXPECT_TRUE(absl::IsAborted(RunOutcome(none, lifecycle::Summarize(none))));
}

}  // namespace
}  // namespace backendlab::tools
