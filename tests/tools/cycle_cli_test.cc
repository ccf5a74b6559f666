// The real `backendlab cycle` and `compare`: usage errors, crashes, leaks,
// stop signals, a removed socket, resource limits and cleanup, as a user sees them.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <map>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/check.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/cycle_cli_fixture.h"
#include "tests/tools/spawned_tool.h"
#include "tests/test_util/skip.h"
#include "tools/cycle_flags.h"

namespace backendlab::tools {
namespace {

using test_util::ChildrenOf;
using test_util::IsOneLineStartingWith;
using test_util::Lines;
using test_util::ReadFile;
using test_util::RunResult;
using test_util::SpawnedTool;

// Small settings for the flags a bad-input case does not set, so that a bad
// input wrongly accepted fails quickly instead of running the full default.
std::vector<std::string> WithSmallDefaults(const std::string& command, std::vector<std::string> args) {
  std::vector<const char*> defaults;
  if (command == "cycle") {
    defaults = {"--shared-buffers=128MB", "--connections=2", "--warmup=0", "--work-lookups=10"};
  } else {
    defaults = {"--layouts=hash",  "--shared-buffers=128MB", "--exit-checks=off", "--connections=2",
                "--rounds=1",      "--warmup=0",             "--work-lookups=10"};
  }
  auto given = [&](const std::string& name) {
    return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.rfind(name, 0) == 0; });
  };
  std::vector<std::string> out = {command};
  out.insert(out.end(), args.begin(), args.end());
  for (const char* flag : defaults) {
    const std::string name = std::string(flag).substr(0, std::string(flag).find('=') + 1);
    // --duration replaces --connections: giving both is an error of its own.
    if (given(name) || (name == "--connections=" && given("--duration="))) continue;
    out.push_back(flag);
  }
  return out;
}

// ---- usage errors -------------------------------------------------------------

struct BadInput {
  std::string command;
  std::vector<std::string> args;
  friend void PrintTo(const BadInput& b, std::ostream* os) {
    *os << b.command;
    for (const std::string& a : b.args) *os << " " << a;
  }
};

class CycleBadInputTest : public CycleCliTest, public testing::WithParamInterface<BadInput> {};

TEST_P(CycleBadInputTest, OneLineOnStderrAndExit2) {
  const BadInput& bad = GetParam();
  const RunResult r = Run(WithSmallDefaults(bad.command, bad.args));
  EXPECT_EQ(r.exit_code, 2) << "stderr: " << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab " + bad.command + ": "));
  EXPECT_EQ(r.out, "") << "a usage error runs nothing and prints no report";
  ExpectTmpdirEmpty();
}

std::vector<BadInput> BadInputs() {
  // Given to both commands; `layout` is `layouts` for compare.
  const std::vector<std::vector<std::string>> kBoth = {
      {"--exit-check=sometimes"},
      {"--shared-buffers=0"},
      {"--shared-buffers=-1"},
      {"--shared-buffers=12XB"},
      {"--shared-buffers=8 GB"},
      {"--shared-buffers=16TB"},
      {"--catcache=heap"},
      {"--syscache=pg99"},
      {"--clients=0"},
      {"--clients=5", "--connections=2"},
      {"--connections=0"},
      {"--connections=-3"},
      {"--mode=threads"},
      {"--mode=inproc", "--clients=2"},
      {"--thread-memory=reuse"},  // without thread mode (compare: without thread in --modes)
      {"--pool=3"},               // without prefork mode (compare: without prefork in --modes)
      {"--mode=prefork", "--pool=0"},
      {"--mode=thread", "--thread-memory=arena"},
      {"--bogus=1"},
      {"--warmup=-1"},
      {"--work-pins=-1"},
      {"--syscalls=maybe"},
      {"--wait=per-call"},  // with no --queries it would change nothing
      {"--kernel=avx512"},
      {"positional"},
  };
  // compare's list flags are plural; its syscache list is --syscaches.
  auto for_compare = [](std::vector<std::string> args) {
    for (std::string& a : args) {
      for (const auto& [one, list] : std::vector<std::pair<std::string, std::string>>{
               {"--exit-check=", "--exit-checks="}, {"--catcache=", "--catcaches="}, {"--syscache=", "--syscaches="},
               {"--mode=", "--modes="}}) {
        if (a.rfind(one, 0) == 0) a = list + a.substr(one.size());
      }
    }
    return args;
  };
  std::vector<BadInput> all;
  for (const auto& args : kBoth) {
    all.push_back({"cycle", args});
    all.push_back({"compare", for_compare(args)});
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--layout=foo"},
           {"--duration=0s"},
           {"--duration=abc"},
           {"--duration=99999999999999999s"},  // would overflow when scaled to ms
           {"--duration=10"},
           {"--duration=1s", "--connections=5"},
           {"--leak-pins=-1"},
           {"--kill-backend=-2"},
           {"--mode=inproc", "--kill-backend=1"},
           {"--mode=prefork", "--hold=2", "--pool=2"},
           {"--layout=hash", "--layout=array"},
           {"--counters=cycles,bogus"},
           {"--counters=task-clock,,cycles"},
       }) {
    all.push_back({"cycle", args});
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--layouts=foo"},
           {"--rounds=0"},
           {"--layouts=array,,hash"},
           {"--shared-buffers=128MB,,1GB"},
           {"--exit-checks=always,sometimes"},
           {"--clients=3", "--connections=2"},  // a round must have a connection per client
           {"--baseline=hash/alwayz"},
           {"--modes=fork,thread,fork"},
           {"--modes=thread", "--html=x.html"},  // a thread cannot be sampled: the baseline's profile
           {"--modes=prefork,fork", "--html=x.html"},
       }) {
    all.push_back({"compare", args});
  }
  return all;
}

std::string BadInputName(const testing::TestParamInfo<BadInput>& info) {
  std::string name = info.param.command;
  for (const std::string& a : info.param.args) {
    name += "_";
    for (char c : a.substr(a.rfind("--", 0) == 0 ? 2 : 0)) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Flags, CycleBadInputTest, testing::ValuesIn(BadInputs()), BadInputName);

TEST(CycleDurationTest, ParsesDurationsOfMillisecondsSecondsAndMinutes) {
  EXPECT_EQ(ParseDuration("500ms").value_or(absl::ZeroDuration()), absl::Milliseconds(500));
  EXPECT_EQ(ParseDuration("10s").value_or(absl::ZeroDuration()), absl::Seconds(10));
  EXPECT_EQ(ParseDuration("2m").value_or(absl::ZeroDuration()), absl::Minutes(2));
  EXPECT_EQ(ParseDuration("1440m").value_or(absl::ZeroDuration()), absl::Hours(24)) << "a day is the most";
  for (const char* bad : {"0s", "0ms", "abc", "10", "s", "-1s", "1.5s", "10 s", "1h", "", "100000m", "1441m"}) {
    absl::StatusOr<absl::Duration> d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << "'" << bad << "'";
    EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << "'" << bad << "': " << d.status();
  }
}

// ---- runs -----------------------------------------------------------------------

TEST_F(CycleCliTest, SmallRunPrintsEveryPhaseAndExitsZero) {
  const std::string json = dir_ + "/cycle.json";
  const RunResult r = Run(Cycle({"--layout=array", "--json=" + json}));
  ASSERT_EQ(r.exit_code, 0) << "stderr: " << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = Lines(r.out);
  for (const char* phase : {"fork", "init_buffers", "init_catcache", "init_other", "work", "exit_check", "teardown", "reap"}) {
    const std::string row = std::string(phase) + " ";
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(row, 0) == 0; }), 1)
        << "one row for phase " << phase << ":\n" << r.out;
  }
  EXPECT_NE(r.out.find("(10 measured, 0 failed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backends: 10 exited, 0 crashed"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_TRUE(j.contains("header") && j["header"].contains("summary")) << j.dump(2);
  const nlohmann::json& summary = j["header"]["summary"];
  EXPECT_EQ(summary.value("connections", -1), 10);
  EXPECT_EQ(summary.value("backends_crashed", -1), 0);
  EXPECT_EQ(summary.value("interrupted", true), false);
  std::vector<std::string> phases;
  for (const nlohmann::json& row : j.value("rows", nlohmann::json::array())) {
    phases.push_back(row.value("phase", ""));
    EXPECT_EQ(row.value("backends", -1), 10) << row.dump();
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"fork", "init_buffers", "init_catcache", "init_other", "work",
                                              "exit_check", "teardown", "reap"}));
  ExpectTmpdirEmpty();
}

TEST_F(CycleCliTest, KilledBackendIsPrintedAndExitsOne) {
  const RunResult r = Run(Cycle({"--kill-backend=5"}));
  EXPECT_EQ(r.exit_code, 1) << "stderr: " << r.err;
  int crash_lines = 0;
  for (const std::string& line : Lines(r.out)) {
    if (line.find("crashed:") == std::string::npos) continue;
    ++crash_lines;
    EXPECT_NE(line.find("connection 5"), std::string::npos) << line;
    EXPECT_TRUE(line.find("SIGKILL") != std::string::npos || line.find("Killed") != std::string::npos) << line;
  }
  EXPECT_EQ(crash_lines, 1) << r.out;
  EXPECT_NE(r.out.find("(9 measured, 1 failed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backends: 9 exited, 1 crashed"), std::string::npos) << r.out;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab cycle: "));
  EXPECT_NE(r.err.find("crashed"), std::string::npos) << r.err;
  ExpectTmpdirEmpty();
}

// A backend thread is a thread of the server: it has a thread's first and
// last phases, in the text and the JSON.
TEST_F(CycleCliTest, ThreadModePrintsAThreadsPhasesAndExitsZero) {
  for (const char* memory : {"fresh", "reuse"}) {
    SCOPED_TRACE(memory);
    const std::string json = dir_ + "/thread.json";
    const RunResult r = Run(Cycle({"--mode=thread", std::string("--thread-memory=") + memory, "--json=" + json}));
    ASSERT_EQ(r.exit_code, 0) << "stderr: " << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find(std::string("thread mode (") + memory + " memory)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("backends: 10 exited, 0 crashed"), std::string::npos) << r.out;
    const nlohmann::json j = nlohmann::json::parse(ReadFile(json), nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j["header"]["config"].value("mode", ""), "thread") << j["header"].dump(2);
    EXPECT_EQ(j["header"]["config"].value("thread_memory", ""), memory) << j["header"].dump(2);
    std::vector<std::string> phases;
    for (const nlohmann::json& row : j.value("rows", nlohmann::json::array())) {
      phases.push_back(row.value("phase", ""));
      EXPECT_EQ(row.value("backends", -1), 10) << row.dump();
    }
    EXPECT_EQ(phases, (std::vector<std::string>{"thread_start", "init_buffers", "init_catcache", "init_other", "work",
                                                "exit_check", "teardown", "thread_join"}));
  }
  ExpectTmpdirEmpty();
}

// A pre-forked backend serves connection after connection: its phases are
// a pooled backend's, in the text and the JSON, and the pool is reported.
TEST_F(CycleCliTest, PreforkModePrintsAPooledBackendsPhasesAndExitsZero) {
  const std::string json = dir_ + "/prefork.json";
  const RunResult r = Run(Cycle({"--mode=prefork", "--pool=2", "--json=" + json}));
  ASSERT_EQ(r.exit_code, 0) << "stderr: " << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("prefork mode (pool 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pool: 2 pre-forked backends, 0 replaced after dying"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["header"]["config"].value("pool", 0), 2);
  EXPECT_EQ(j["header"]["summary"].value("replaced", -1), 0);
  std::vector<std::string> phases;
  for (const nlohmann::json& row : j.value("rows", nlohmann::json::array())) phases.push_back(row.value("phase", ""));
  EXPECT_EQ(phases, (std::vector<std::string>{"handoff", "init_buffers", "init_catcache", "init_other", "work",
                                              "exit_check", "reset", "release"}));
  ExpectTmpdirEmpty();
}

// A pre-forked backend killed mid-connection is replaced; the run says so,
// names the crash and exits 1, as a crashed forked backend's run does.
TEST_F(CycleCliTest, AKilledPreforkedBackendIsReplacedAndTheRunSaysSo) {
  const RunResult r = Run(Cycle({"--mode=prefork", "--kill-backend=5"}));
  EXPECT_EQ(r.exit_code, 1) << "stderr: " << r.err;
  EXPECT_NE(r.out.find("(9 measured, 1 failed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 replaced after dying"), std::string::npos) << r.out;
  EXPECT_EQ(CountLinesContaining(r.out, "(connection 5) crashed:"), 1) << r.out;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab cycle: ")) << r.err;
  ExpectTmpdirEmpty();
}

// A backend thread that crashes takes the server with it: one line, exit 1,
// nothing left behind.
TEST_F(CycleCliTest, ACrashedBackendThreadEndsTheRunWithOneLine) {
  const RunResult r = Run(Cycle({"--mode=thread", "--kill-backend=5"}));
  EXPECT_EQ(r.exit_code, 1) << "stderr: " << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab cycle: ")) << r.err;
  EXPECT_NE(r.err.find("the server process died (signal 9)"), std::string::npos) << r.err;
  ExpectTmpdirEmpty();
}

// compare across modes: a row per mode and configuration, JSON key `mode`,
// a later mode's row against its own configuration in the first.
TEST_F(CycleCliTest, CompareAcrossModesHasARowPerModeAgainstTheFirstMode) {
  const std::string json = dir_ + "/modes.json";
  const RunResult r = Run({"compare", "--modes=fork,thread,prefork", "--layouts=array,hash", "--shared-buffers=128MB",
                           "--exit-checks=always", "--connections=4", "--rounds=2", "--warmup=1", "--work-lookups=10",
                           "--json=" + json});
  ASSERT_EQ(r.exit_code, 0) << "stderr: " << r.err;
  EXPECT_NE(r.out.find("every configuration: fork, thread, prefork modes (thread: fresh memory; prefork: pool of clients + held + 1, steady state: its build and end left out),"),
            std::string::npos)
      << r.out;
  const std::vector<std::string> lines = Lines(r.out);
  for (const std::string label : {"fork array/always ", "fork hash/always ", "thread array/always ", "thread hash/always ",
                                  "prefork array/always ", "prefork hash/always "}) {
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(label, 0) == 0; }), 1)
        << label << "\n" << r.out;
  }
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["header"].value("baseline", ""), "fork array/always");
  EXPECT_EQ(j["header"]["modes"], nlohmann::json::array({"fork", "thread", "prefork"}));
  std::vector<std::string> modes;
  std::map<std::string, std::vector<double>> fork_rounds;  // by layout
  for (const nlohmann::json& row : j.value("rows", nlohmann::json::array())) {
    modes.push_back(row.value("mode", ""));
    const std::vector<double> rounds = row["rounds_server_cpu_us"].get<std::vector<double>>();
    if (row.value("mode", "") == "fork") {
      fork_rounds[row.value("layout", "")] = rounds;
      continue;
    }
    // A thread or prefork row's ratio is to the same layout's fork row,
    // paired within rounds: the geometric mean of the rounds' ratios.
    const std::vector<double>& base = fork_rounds[row.value("layout", "")];
    ASSERT_EQ(base.size(), rounds.size()) << row.dump();
    double log_sum = 0;
    for (size_t i = 0; i < rounds.size(); ++i) log_sum += std::log(rounds[i] / base[i]);
    EXPECT_NEAR(row.value("server_cpu_us_vs_baseline", 0.0), std::exp(log_sum / static_cast<double>(rounds.size())), 1e-9)
        << row.dump();
    EXPECT_TRUE(row["server_cpu_us_vs_baseline_ci"].is_array()) << row.dump();
  }
  EXPECT_EQ(modes, (std::vector<std::string>{"fork", "fork", "thread", "thread", "prefork", "prefork"}));
  ExpectTmpdirEmpty();
}

// A backend that dies during warm-up is left out of the figures, not of the
// outcome: it is named and the run exits 1.
TEST_F(CycleCliTest, KilledWarmupBackendIsPrintedAndExitsOne) {
  const RunResult r = Run(Cycle({"--kill-backend=1"}));  // warm-up is connections 0 and 1
  EXPECT_EQ(r.exit_code, 1) << "stderr: " << r.err;
  EXPECT_EQ(CountLinesContaining(r.out, "(connection 1) crashed:"), 1) << r.out;
  EXPECT_NE(r.out.find("(10 measured, 0 failed)"), std::string::npos) << r.out;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab cycle: "));
  EXPECT_NE(r.err.find("(connection 1) crashed:"), std::string::npos) << r.err;
  ExpectTmpdirEmpty();
}

TEST_F(CycleCliTest, PlantedLeakIsReportedWhenTheExitCheckRuns) {
  {
    const RunResult r = Run(Cycle({"--layout=array", "--exit-check=always", "--leak-pins=2"}));
    EXPECT_EQ(r.exit_code, 0) << "a leak is a warning, as in PostgreSQL: stderr: " << r.err;
    EXPECT_GE(CountLinesContaining(r.out, "buffer refcount leak"), 2) << r.out;
    EXPECT_NE(r.out.find("buffer leaks reported by the exit check: 20"), std::string::npos) << r.out;
  }
  // Each scan kernel finds the same leaks, and the report names the one used
  // (the 9.0 row of compare is 9.0's design, not 9.0's loop, unless naive).
  for (const char* kernel : {"naive", "word", "simd"}) {
    SCOPED_TRACE(kernel);
    const RunResult r = Run(Cycle({"--layout=bytes", "--exit-check=always", "--leak-pins=2", std::string("--kernel=") + kernel}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("buffer leaks reported by the exit check: 20"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string("exit scan ") + kernel), std::string::npos) << r.out;
  }
  {
    const RunResult r = Run(Cycle({"--layout=array", "--exit-check=off", "--leak-pins=2"}));
    EXPECT_EQ(r.exit_code, 0) << "stderr: " << r.err;
    EXPECT_EQ(CountLinesContaining(r.out, "buffer refcount leak"), 0) << r.out;
    EXPECT_NE(r.out.find("buffer leaks reported by the exit check: 0"), std::string::npos) << r.out;
  }
  {
    const RunResult r = Run(Cycle({"--layout=array", "--exit-check=assert", "--leak-pins=2"}));
    EXPECT_EQ(r.exit_code, 0) << "stderr: " << r.err;
    if constexpr (kAssertChecking) {
      EXPECT_GE(CountLinesContaining(r.out, "buffer refcount leak"), 2) << r.out;
    } else {
      EXPECT_EQ(CountLinesContaining(r.out, "buffer refcount leak"), 0) << r.out;
      EXPECT_NE(r.out.find("compiled out"), std::string::npos) << r.out;
    }
  }
  ExpectTmpdirEmpty();
}

TEST_F(CycleCliTest, UnusableTmpdirIsARunFailureOnOneLine) {
  setenv("TMPDIR", "/nonexistent-dir", 1);
  const RunResult r = Run(Cycle({}));
  EXPECT_EQ(r.exit_code, 1) << "stderr: " << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab cycle: "));
  EXPECT_NE(r.err.find("/nonexistent-dir"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CycleCliTest, CompareSmallMatrixExitsZero) {
  const RunResult r = Run({"compare", "--layouts=array,hash", "--shared-buffers=128MB", "--exit-checks=always",
                           "--connections=4", "--rounds=2", "--warmup=1", "--work-lookups=10"});
  ASSERT_EQ(r.exit_code, 0) << "stderr: " << r.err;
  EXPECT_EQ(r.err, "");
  // One row per configuration, each row starting with its label.
  for (const std::string label : {"array/always ", "hash/always "}) {
    const std::vector<std::string> lines = Lines(r.out);
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(label, 0) == 0; }), 1)
        << label << "\n" << r.out;
  }
  ExpectTmpdirEmpty();
}

// ---- stop signals, a removed socket, resource limits ----------------------------

TEST_F(CycleCliTest, SigintStopsTheRunCleanlyWithExit130) {
  SpawnedTool tool(LongCycle(), dir_);
  ASSERT_GT(tool.pid(), 0);
  ASSERT_TRUE(WaitUntilRunning(tool, tmpdir_, dir_));
  const std::vector<pid_t> postmaster = test_util::ChildrenNamed(tool.pid(), "postmaster");

  ASSERT_EQ(kill(tool.pid(), SIGINT), 0);
  const std::optional<int> status = tool.WaitFor(std::chrono::seconds(10));
  ASSERT_TRUE(status) << "still running 10 s after SIGINT";
  EXPECT_TRUE(WIFEXITED(*status)) << "killed by the signal instead of stopping cleanly: status " << *status;
  if (WIFEXITED(*status)) {
    EXPECT_EQ(WEXITSTATUS(*status), 130);
  }
  ExpectNoProcessLeft();
  for (pid_t pid : postmaster) EXPECT_EQ(kill(pid, 0), -1) << "the postmaster " << pid << " outlived the tool";
  ExpectTmpdirEmpty();
  // One line: backends whose client went away at the stop say nothing.
  const std::string err = ReadFile(dir_ + "/stderr");
  EXPECT_TRUE(IsOneLineStartingWith(err, "backendlab cycle: "));
  EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
}

// The stop signals sent to the whole process group, as a terminal does (^C,
// ^\, a hang-up) and `timeout`/`kill -- -PGID` do: the tool, its postmaster
// and its backends all get it. Exit 128 + the signal, nothing left.
class CycleStopSignalTest : public CycleCliTest, public testing::WithParamInterface<int> {};

TEST_P(CycleStopSignalTest, StopsTheWholeGroupCleanly) {
  const int signal = GetParam();
  SpawnedTool tool(LongCycle(), dir_, /*own_group=*/true);
  ASSERT_GT(tool.pid(), 0);
  ASSERT_TRUE(WaitUntilRunning(tool, tmpdir_, dir_));

  ASSERT_EQ(kill(-tool.pid(), signal), 0);
  const std::optional<int> status = tool.WaitFor(std::chrono::seconds(10));
  ASSERT_TRUE(status) << "still running 10 s after " << strsignal(signal);
  EXPECT_TRUE(WIFEXITED(*status)) << "killed by the signal instead of stopping cleanly: status " << *status;
  if (WIFEXITED(*status)) {
    EXPECT_EQ(WEXITSTATUS(*status), 128 + signal);
  }
  ExpectNoProcessLeft();
  ExpectTmpdirEmpty();
  const std::string err = ReadFile(dir_ + "/stderr");
  EXPECT_TRUE(IsOneLineStartingWith(err, "backendlab cycle: ")) << strsignal(signal);
  EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
  EXPECT_EQ(CountLinesContaining(ReadFile(dir_ + "/stdout"), "crashed:"), 0)
      << "backends stopped by the signal are not crashes";
}

std::string SignalParamName(const testing::TestParamInfo<int>& param) { return sigabbrev_np(param.param); }

// ^C to the whole group in the other server modes: a threaded server
// ignores it as the postmaster does, pre-forked backends die of it and are
// not replaced. Exit 130, nothing left.
TEST_F(CycleCliTest, SigintToTheGroupStopsThreadAndPreforkRunsCleanly) {
  for (const char* mode : {"--mode=thread", "--mode=prefork"}) {
    SCOPED_TRACE(mode);
    std::vector<std::string> args = LongCycle();
    args.push_back(mode);
    SpawnedTool tool(args, dir_, /*own_group=*/true);
    ASSERT_GT(tool.pid(), 0);
    ASSERT_TRUE(WaitUntilRunning(tool, tmpdir_, dir_));
    ASSERT_EQ(kill(-tool.pid(), SIGINT), 0);
    const std::optional<int> status = tool.WaitFor(std::chrono::seconds(10));
    ASSERT_TRUE(status) << "still running 10 s after SIGINT";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 130) << "status " << *status;
    ExpectNoProcessLeft();
    ExpectTmpdirEmpty();
    const std::string err = ReadFile(dir_ + "/stderr");
    EXPECT_TRUE(IsOneLineStartingWith(err, "backendlab cycle: ")) << err;
    EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
    const std::string out = ReadFile(dir_ + "/stdout");
    EXPECT_EQ(CountLinesContaining(out, "crashed:"), 0) << out;
    EXPECT_EQ(CountLinesContaining(out, "1 replaced"), 0) << out;
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, CycleStopSignalTest, testing::Values(SIGINT, SIGTERM, SIGHUP, SIGQUIT), SignalParamName);

// The socket's directory removed from outside mid-run: one line naming the
// failed call and errno, exit 1, instead of a silent hang.
TEST_F(CycleCliTest, SocketDirectoryRemovedMidRunEndsWithOneLine) {
  SpawnedTool tool(LongCycle(), dir_);
  ASSERT_GT(tool.pid(), 0);
  const std::optional<std::string> socket = WaitUntilRunning(tool, tmpdir_, dir_);
  ASSERT_TRUE(socket);
  std::filesystem::remove_all(std::filesystem::path(*socket).parent_path());

  const std::optional<int> status = tool.WaitFor(std::chrono::seconds(10));
  ASSERT_TRUE(status) << "still running 10 s after its socket directory was removed";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  const std::string err = ReadFile(dir_ + "/stderr");
  EXPECT_TRUE(IsOneLineStartingWith(err, "backendlab cycle: connect to ")) << err;
  EXPECT_NE(err.find("ENOENT"), std::string::npos) << err;
  ExpectNoProcessLeft();
  ExpectTmpdirEmpty();
}

// More clients than `ulimit -n` allows sockets for: a usage error up front
// (poll() would fail with EINVAL on every turn), saying what is needed.
TEST_F(CycleCliTest, ClientsBeyondTheOpenFileLimitAreAUsageError) {
  const RunResult r = test_util::RunProgram(
      {"/bin/sh", "-c", "ulimit -n 64 && exec \"$0\" \"$@\"", BACKENDLAB_CLI_PATH, "cycle", "--clients=64",
       "--connections=100", "--shared-buffers=128MB"},
      dir_);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab cycle: --clients=64 needs `ulimit -n ")) << r.err;
  EXPECT_EQ(r.out, "");
  ExpectTmpdirEmpty();
}

// Processes of `uid`, from /proc: what RLIMIT_NPROC counts.
int ProcessesOf(uid_t uid) {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::ifstream status(entry.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) != 0) continue;
      std::istringstream fields(line.substr(4));
      uid_t real = 0;
      if (fields >> real && real == uid) ++n;
      break;
    }
  }
  return n;
}

// fork() refused in the postmaster (RLIMIT_NPROC reached): one line naming
// fork and its errno, exit 1, nothing left, instead of a line per connection;
// with several clients too, whose retries meet the socket the failing
// postmaster removed (the cause is named, not that symptom). Root ignores
// RLIMIT_NPROC, so the tool runs as `nobody`, a user with no other process.
TEST_F(CycleCliTest, ForkRefusedEndsTheRunWithOneLine) {
  if (geteuid() != 0) {
    BACKENDLAB_SKIP(test_util::kNeedsRoot) << "RLIMIT_NPROC counts every process of this user, which tests running "
                                              "in parallel change; as root the tool runs as nobody, whose count is known";
  }
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) BACKENDLAB_SKIP("a user nobody") << "as root, RLIMIT_NPROC is counted for a user with no other process";
  const uid_t uid = nobody->pw_uid;
  const gid_t gid = nobody->pw_gid;
  // nobody must reach the binary's TMPDIR; the output files are opened
  // before the switch.
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  ASSERT_EQ(chmod(tmpdir_.c_str(), 0777), 0);
  for (const char* clients : {"--clients=1", "--clients=4"}) {
    SCOPED_TRACE(clients);
    // The tool, its clean-up watchdog (base/private_dir.h) and its
    // postmaster fit; not one more process of that user.
    const rlim_t limit = static_cast<rlim_t>(ProcessesOf(uid) + 3);
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
      if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(125);
      const rlimit nproc = {limit, limit};
      if (setrlimit(RLIMIT_NPROC, &nproc) != 0) _exit(124);
      execl(BACKENDLAB_CLI_PATH, BACKENDLAB_CLI_PATH, "cycle", "--connections=20", clients, "--shared-buffers=128MB",
            "--work-lookups=10", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    ASSERT_LT(WEXITSTATUS(status), 124) << "could not set up the child: " << WEXITSTATUS(status);
    EXPECT_EQ(WEXITSTATUS(status), 1) << ReadFile(err);
    const std::string errors = ReadFile(err);
    EXPECT_TRUE(IsOneLineStartingWith(errors, "backendlab cycle: postmaster: fork: ")) << errors;
    EXPECT_NE(errors.find("EAGAIN"), std::string::npos) << errors;
    ExpectNoProcessLeft();
    ExpectTmpdirEmpty();
  }
}

}  // namespace
}  // namespace backendlab::tools
