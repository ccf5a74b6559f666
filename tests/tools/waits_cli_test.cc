// `backendlab latch` and `backendlab waits`, run as the real binary: bad
// input is one line and exit 2, a tiny run's table and JSON, and a stop
// (^C, or the tool killed) leaves no process behind.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/lifecycle/child_processes.h"
#include "tests/tools/cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::ReadFile;
using test_util::RunResult;

class WaitsCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // Orphans of a killed tool are reparented here, so they can be seen.
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  }

  // Every process the tool left is gone within a few seconds (a killed
  // tool's children die with it); reaps them as they go.
  void ExpectNoProcessLeft() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<pid_t> left;
    do {
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      left.clear();
      for (pid_t p : test_util::ChildrenOf(getpid())) left.push_back(p);
      if (left.empty()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (std::chrono::steady_clock::now() < deadline);
    ADD_FAILURE() << left.size() << " process(es) of the tool outlived it";
    for (pid_t p : left) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
  }

  // Starts `args`, waits until it has children (its experiment runs), sends
  // `signal`, and returns its wait status.
  int SignalWhileRunning(const std::vector<std::string>& args, int signal) {
    std::vector<std::string> argv = {BACKENDLAB_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = test_util::SpawnProgram(argv, dir_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline && test_util::ChildrenOf(pid).empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_FALSE(test_util::ChildrenOf(pid).empty()) << "the experiment never started: " << ReadFile(dir_ + "/stderr");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pid, signal);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    return status;
  }
};

TEST_F(WaitsCliTest, BadInputIsOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> kBad = {
      {"latch", "--latches=kqueue"},
      {"latch", "--latches=futex,futex"},
      {"latch", "--latches="},
      {"latch", "--rounds=0"},
      {"latch", "--duration=5ms"},
      {"latch", "--duration=2h"},
      {"latch", "--cpus=0,1,0"},
      {"latch", "--cpus=4096"},
      {"latch", "--cpus=0,0"},
      {"latch", "--cpus=0\n1"},  // escaped: one line
      {"latch", "--cpus=x"},
      {"latch", "--syscalls=maybe"},
      {"latch", "--pairs=2"},
      {"waits", "--pairs=0"},
      {"waits", "--pairs=65"},
      {"waits", "--pairs=1,1"},
      {"waits", "--pairs=two"},
      {"waits", "--pairs=-1"},
      {"waits", "--strategies=epoll"},
      {"waits", "--strategies=per-call,per-call"},
      {"waits", "--transport=udp"},
      {"waits", "--shape=proxy"},
      {"waits", "--rounds=1001"},
      {"waits", "--duration=0ms"},
      {"waits", "--latches=futex"},
  };
  for (const std::vector<std::string>& bad : kBad) {
    const RunResult r = Run(WithDefaults(bad, {"--rounds=1", "--duration=10ms", "--syscalls=off"}));
    EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1] << "\nstderr: " << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab " + bad[0] + ": ")) << bad[1] << ": " << r.err;
    EXPECT_EQ(r.out, "") << bad[1];
  }
  ExpectNothingCreated();
}

TEST_F(WaitsCliTest, LatchTinyRunPrintsEveryImplementationAndWritesJson) {
  const std::string json_path = dir_ + "/latch.json";
  const RunResult r = Run({"latch", "--rounds=2", "--duration=20ms", "--cpus=0", "--json=" + json_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"selfpipe-select", "selfpipe-poll", "signalfd-epoll", "semaphore", "eventfd-epoll", "futex"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
  }
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json_path));
  EXPECT_EQ(j["header"]["command"], "latch");
  EXPECT_EQ(j["header"]["cpus"], nlohmann::json({0}));
  EXPECT_EQ(j["header"]["baseline"], "selfpipe-select");
  ASSERT_EQ(j["rows"].size(), 6u);
  for (const nlohmann::json& row : j["rows"]) {
    EXPECT_GT(row["round_trips_per_second"].get<double>(), 0);
    if (row["latch"] == "selfpipe-select") {
      EXPECT_DOUBLE_EQ(row["round_trips_per_second_vs_baseline"].get<double>(), 1.0);
      EXPECT_TRUE(row["round_trips_per_second_vs_baseline_ci"].is_null()) << row;
      continue;
    }
    // Paired over the two rounds: an interval around the ratio, and its verdict.
    const double ratio = row["round_trips_per_second_vs_baseline"].get<double>();
    ASSERT_TRUE(row["round_trips_per_second_vs_baseline_ci"].is_array()) << row;
    EXPECT_LE(row["round_trips_per_second_vs_baseline_ci"][0].get<double>(), ratio) << row;
    EXPECT_GE(row["round_trips_per_second_vs_baseline_ci"][1].get<double>(), ratio) << row;
    const std::string verdict = row["round_trips_per_second_vs_baseline_verdict"].get<std::string>();
    EXPECT_TRUE(verdict == "faster" || verdict == "slower" || verdict == "~") << row;
  }
  ExpectNoProcessLeft();
  ExpectTmpdirEmpty();
}

TEST_F(WaitsCliTest, WaitsTinyRunHasRatiosToLongLived) {
  const std::string json_path = dir_ + "/waits.json";
  const RunResult r = Run({"waits", "--pairs=1,2", "--rounds=2", "--duration=20ms", "--json=" + json_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json_path));
  EXPECT_EQ(j["header"]["transport"], "unix");
  ASSERT_EQ(j["rows"].size(), 8u);
  for (const nlohmann::json& row : j["rows"]) {
    EXPECT_GT(row["round_trips_per_second"].get<double>(), 0) << row;
    if (row["strategy"] == "long-lived") {
      EXPECT_DOUBLE_EQ(row["vs_long_lived"].get<double>(), 1.0);
      EXPECT_TRUE(row["vs_long_lived_ci"].is_null()) << row;
      EXPECT_TRUE(row["vs_long_lived_verdict"].is_null()) << row;
    } else {
      // Paired over the two rounds: an interval around the ratio, and its verdict.
      ASSERT_TRUE(row["vs_long_lived_ci"].is_array()) << row;
      const double ratio = row["vs_long_lived"].get<double>();
      EXPECT_LE(row["vs_long_lived_ci"][0].get<double>(), ratio) << row;
      EXPECT_GE(row["vs_long_lived_ci"][1].get<double>(), ratio) << row;
      const std::string verdict = row["vs_long_lived_verdict"].get<std::string>();
      EXPECT_TRUE(verdict == "faster" || verdict == "slower" || verdict == "~") << row;
    }
  }
  // In text, each ratio with its interval and verdict: "0.93 [0.911, 0.952] faster".
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"([0-9]\.[0-9]+ \[[0-9.]+, [0-9.]+\] (faster|slower|~))"))) << r.out;

  ExpectNoProcessLeft();
}

TEST_F(WaitsCliTest, AStopEndsTheRunAndLeavesNothing) {
  for (const char* command : {"latch", "waits"}) {
    SCOPED_TRACE(command);
    const int status = SignalWhileRunning({command, "--rounds=50", "--duration=1s"}, SIGINT);
    ASSERT_TRUE(WIFEXITED(status)) << "killed instead of stopping: status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
    EXPECT_TRUE(IsOneLineStartingWith(ReadFile(dir_ + "/stderr"), std::string("backendlab ") + command + ": interrupted"))
        << ReadFile(dir_ + "/stderr");
    ExpectNoProcessLeft();
  }
}

TEST_F(WaitsCliTest, AKilledToolTakesItsProcessesWithIt) {
  for (const char* command : {"latch", "waits"}) {
    SCOPED_TRACE(command);
    const int status = SignalWhileRunning({command, "--rounds=50", "--duration=1s"}, SIGKILL);
    EXPECT_TRUE(WIFSIGNALED(status));
    ExpectNoProcessLeft();
  }
}

}  // namespace
}  // namespace backendlab::tools
