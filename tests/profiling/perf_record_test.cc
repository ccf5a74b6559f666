// DieWithParentIfAsked: what a workload under RecordUnderPerf calls first in
// main() to end with perf, and that nothing calls it implicitly.
#include "profiling/perf_record.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/interrupt.h"
#include "profiling/perf_events.h"
#include "profiling/perf_script.h"
#include "gtest/gtest.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"
#include "tests/test_util/skip.h"

namespace backendlab::profiling {
namespace {

// Runs `body` in a forked child with kDieWithParentEnv set to `value` (unset
// if empty) and returns the child's exit code: `body`'s result, or what
// DieWithParentIfAsked ended it with.
int InChild(const std::string& value, int (*body)()) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (value.empty()) {
      unsetenv(kDieWithParentEnv);
    } else {
      setenv(kDieWithParentEnv, value.c_str(), 1);
    }
    DieWithParentIfAsked();
    _exit(body());
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// 0 if the death signal is SIGTERM and the variable is gone, else 1.
int DiesWithParentAndForgets() {
  int signal = 0;
  if (prctl(PR_GET_PDEATHSIG, &signal) != 0) return 1;
  return signal == SIGTERM && std::getenv(kDieWithParentEnv) == nullptr ? 0 : 1;
}

int NoDeathSignal() {
  int signal = 0;
  return prctl(PR_GET_PDEATHSIG, &signal) == 0 && signal == 0 ? 0 : 1;
}

TEST(DieWithParentTest, AskedByItsParentItDiesWithItAndForgetsTheVariable) {
  EXPECT_EQ(InChild(absl::StrCat(getpid()), DiesWithParentAndForgets), 0);
}

TEST(DieWithParentTest, ParentAlreadyGoneEndsAtOnceAsIfTerminated) {
  // pid 1 is not the child's parent: the parent it was meant for is gone.
  EXPECT_EQ(InChild("1", NoDeathSignal), 128 + SIGTERM);
}

TEST(DieWithParentTest, WithoutTheVariableNothingChanges) { EXPECT_EQ(InChild("", NoDeathSignal), 0); }

// It ran from a static constructor in every program that linked it, before
// main. This binary links it (the tests above call it): started with the
// variable naming a parent that is not its own, it must still reach main.
class DieWithParentStartTest : public test_util::TempDirTest {};

TEST_F(DieWithParentStartTest, NothingRunsItBeforeMain) {
  test_util::ScopedEnv env(kDieWithParentEnv, "1");
  const test_util::RunResult r = test_util::RunProgram({"/proc/self/exe", "--gtest_list_tests"}, dir_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NothingRunsItBeforeMain"), std::string::npos) << r.out;
}

// RecordSystemWide needs perf and the right to record every CPU.
class RecordSystemWideTest : public test_util::TempDirTest {
 protected:
  void SetUp() override {
    test_util::TempDirTest::SetUp();
    if (std::system("command -v perf >/dev/null 2>&1") != 0) {
      BACKENDLAB_SKIP(test_util::kNeedsPerf) << "perf is not installed (apt-get install linux-perf)";
    }
    const std::optional<int> paranoid = PerfEventParanoid();
    if (geteuid() != 0 && (!paranoid || *paranoid > 0)) {
      BACKENDLAB_SKIP(test_util::kNeedsRoot) << "perf record -a needs root or kernel.perf_event_paranoid <= 0";
    }
  }
  SystemWideRecordOptions Options() const {
    SystemWideRecordOptions options;
    options.work_dir = dir_;
    return options;
  }
  void TearDown() override {
    ResetStopRequestForTesting();
    test_util::TempDirTest::TearDown();
  }
};

TEST_F(RecordSystemWideTest, RecordsWhileTheWorkloadRunsWithTaskEvents) {
  bool ran = false;
  absl::StatusOr<SystemWideRecording> recording = RecordSystemWide(Options(), [&] {
    ran = true;
    return std::system("/bin/true") == 0 ? absl::OkStatus() : absl::InternalError("true failed");
  });
  ASSERT_TRUE(recording.ok()) << recording.status();
  EXPECT_TRUE(ran);
  // The workload's fork of /bin/sh is recorded as it happened (perf's
  // synthesized records of the tasks it found at its start say time 0).
  bool forked = false;
  const absl::Status parsed = ForEachPerfScriptRecord(recording->script, {}, nullptr, [&](const PerfTaskEvent& e) {
    if (e.kind == PerfTaskEvent::Kind::kFork && e.parent_pid == getpid() && e.time > 0) forked = true;
  });
  if (!parsed.ok()) {
    // The line the parser refused, to see what perf printed.
    std::string line = "?";
    const std::string message(parsed.message());
    if (const size_t at = message.find("line "); at != std::string::npos) {
      const int n = std::atoi(message.c_str() + at + 5);
      size_t pos = 0;
      for (int i = 1; i < n && pos != std::string::npos; ++i) pos = recording->script.find('\n', pos) + 1;
      if (pos != std::string::npos) line = recording->script.substr(pos, recording->script.find('\n', pos) - pos);
    }
    FAIL() << parsed << "; the line: " << line;
  }
  EXPECT_TRUE(forked) << "no FORK record of this process's child during the recording";
  EXPECT_GT(recording->recorded_seconds, 0);
  int status = 0;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1) << "a child was left";
  // The work directory serves another recording: the control fifos are gone.
  absl::StatusOr<SystemWideRecording> again = RecordSystemWide(Options(), [] { return absl::OkStatus(); });
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST_F(RecordSystemWideTest, WorkloadErrorIsReturnedAndPerfReaped) {
  absl::StatusOr<SystemWideRecording> recording =
      RecordSystemWide(Options(), [] { return absl::DataLossError("workload broke"); });
  EXPECT_EQ(recording.status().code(), absl::StatusCode::kDataLoss) << recording.status();
  int status = 0;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1) << "a child was left";
}

TEST_F(RecordSystemWideTest, StopRequestEndsEverything) {
  absl::StatusOr<SystemWideRecording> recording = RecordSystemWide(Options(), [] {
    RequestStop(SIGINT);
    return absl::OkStatus();
  });
  EXPECT_EQ(recording.status().code(), absl::StatusCode::kCancelled) << recording.status();
  int status = 0;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1) << "a child was left";
}

}  // namespace
}  // namespace backendlab::profiling
