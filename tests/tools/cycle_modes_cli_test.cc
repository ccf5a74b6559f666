// The real `backendlab cycle` in its thread and prefork modes, and the
// postmaster's choices around them: queries in a thread, a pool's build
// stopped or orphaned, a pool member stopped, the pool's one limit, the
// reaping by pidfd, and what the help and the failing line say.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lifecycle/cycle.h"
#include "nlohmann/json.hpp"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/wait.h"
#include "tests/tools/cycle_cli_fixture.h"
#include "tests/tools/spawned_tool.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/flags.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::Lines;
using test_util::ReadFile;
using test_util::RunResult;
using test_util::SpawnedTool;

// ---- queries in a backend thread ----------------------------------------------

// The probe's `cycle --mode=thread --queries=3`: every backend thread
// answers its queries, through every wait strategy, and none is reported
// crashed or failed.
TEST_F(CycleCliTest, BackendThreadsAnswerQueriesThroughEveryWaitStrategy) {
  for (const char* wait : {"per-call", "long-lived", "cached", "poll"}) {
    SCOPED_TRACE(wait);
    const RunResult r = Run(Cycle({"--mode=thread", "--queries=3", std::string("--wait=") + wait, "--clients=2"}));
    EXPECT_EQ(r.exit_code, 0) << "stderr: " << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("(10 measured, 0 failed)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("backends: 10 exited, 0 crashed"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("query round trip us:"), std::string::npos) << r.out;
  }
  ExpectTmpdirEmpty();
}

}  // namespace
}  // namespace backendlab::tools
