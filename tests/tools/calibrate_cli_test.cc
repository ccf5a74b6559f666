// `backendlab calibrate` against Debian's PostgreSQL 15: bad input, and a
// tiny fit whose profile file `cycle --backend-profile` then runs with.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lifecycle/backend_weight.h"
#include "nlohmann/json.hpp"
#include "profiling/perf_record.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/pg_cli_fixture.h"
#include "tests/test_util/skip.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::ReadFile;
using test_util::RunResult;

class CalibrateCliTest : public CliTest {};

TEST_F(CalibrateCliTest, BadInputIsOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> kBad = {
      {"calibrate", "--shared-buffers=12XB"},
      {"calibrate", "--check=128MB"},  // the size fitted
      {"calibrate", "--check=maybe"},
      {"calibrate", "--connections=5"},
      {"calibrate", "--rounds=0"},
      {"calibrate", "--iterations=50"},
      {"calibrate", "--saturation=1"},  // one client is not saturation
      {"calibrate", "--connections=10", "--saturation=11"},
      {"calibrate", "--bindir=/nonexistent"},
      {"calibrate", "--bogus=1"},
      {"cycle", "--backend-profile=/nonexistent/p.json"},
      {"cycle", "--mode=inproc", "--backend-profile=PROFILE"},
  };
  const std::string profile = dir_ + "/p.json";
  ASSERT_TRUE(WriteTextFile(profile, R"({"format": "backendlab backend profile 1"})").ok());
  for (std::vector<std::string> bad : kBad) {
    for (std::string& a : bad) {
      if (a == "--backend-profile=PROFILE") a = "--backend-profile=" + profile;
    }
    const RunResult r = Run(bad);
    EXPECT_EQ(r.exit_code, 2) << bad[1] << "\nstderr: " << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab " + bad[0] + ": ")) << bad[1] << ": " << r.err;
  }
  // A profile with a bad key: the key is named.
  ASSERT_TRUE(WriteTextFile(profile, R"({"format": "backendlab backend profile 1", "exit": {"cpu_us": -5}})").ok());
  const RunResult r = Run({"cycle", "--connections=5", "--backend-profile=" + profile});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("exit.cpu_us"), std::string::npos) << r.err;
}

// Against the real server: perf is needed for its phases.
class CalibrateServerTest : public PgCliTest {
 protected:
  void SetUp() override {
    PgCliTest::SetUp();
    if (IsSkipped()) return;
    if (absl::Status s = profiling::SystemWideRecordingAvailable(); !s.ok()) BACKENDLAB_SKIP(test_util::PerfRecordNeed(s)) << s.message();
  }
};

// A fit of a few connections: the profile is written, parses, and a cycle
// with it runs; the server is gone afterwards.
TEST_F(CalibrateServerTest, TinyFitWritesAProfileACycleRunsWith) {
  const std::string profile = dir_ + "/fitted.json", json = dir_ + "/calibrate.json";
  const RunResult r = Run({"calibrate", "--connections=20", "--warmup=2", "--rounds=2", "--iterations=1", "--check=off",
                           "--saturation=3", "--backend-profile=" + profile, "--json=" + json});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("server CPU us/conn"), std::string::npos) << r.out;
  absl::StatusOr<lifecycle::BackendWeight> w = lifecycle::LoadBackendWeight(profile);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->libraries.empty()) << "the real postmaster's libraries";
  EXPECT_GT(w->startup.read_file_bytes, 0) << "the relcache init files' size";
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json));
  EXPECT_GT(j["header"]["real"]["server_cpu_us"].get<double>(), 0);
  EXPECT_GT(j["header"]["mock"]["server_cpu_us"].get<double>(), 0);
  // The side-by-side's two rounds, paired: the calibrated mock's CPU per
  // connection over the real server's is the geometric mean of the rounds'
  // quotients, inside its interval, and the goal is judged on that interval.
  const nlohmann::json& real_cpu = j["header"]["real"]["rounds_server_cpu_us"];
  const nlohmann::json& mock_cpu = j["header"]["mock"]["rounds_server_cpu_us"];
  ASSERT_EQ(real_cpu.size(), 2u) << j["header"]["real"].dump();
  ASSERT_EQ(mock_cpu.size(), 2u);
  const double expected = std::sqrt(mock_cpu[0].get<double>() / real_cpu[0].get<double>() * mock_cpu[1].get<double>() /
                                    real_cpu[1].get<double>());
  std::map<std::string, nlohmann::json> rows;
  for (const nlohmann::json& row : j["rows"]) rows[row["figure"].get<std::string>()] = row;
  const nlohmann::json& cpu = rows["server CPU us/conn"];
  EXPECT_NEAR(cpu["vs_real"].get<double>(), expected, 1e-9 * expected) << cpu.dump();
  ASSERT_EQ(cpu["vs_real_ci"].size(), 2u) << cpu.dump();
  EXPECT_LE(cpu["vs_real_ci"][0].get<double>(), expected);
  EXPECT_GE(cpu["vs_real_ci"][1].get<double>(), expected);
  const std::string goal = cpu["goal"].get<std::string>();
  EXPECT_TRUE(goal == "met" || goal == "missed" || goal == "unsure") << goal;
  EXPECT_EQ(rows["conn/s"]["goal"], "") << "conn/s is checked, not fitted";
  EXPECT_EQ(rows["conn/s"]["vs_real_ci"].size(), 2u) << rows["conn/s"].dump();
  // The saturation check: 3 clients in flight, in the same two rounds,
  // conn/s paired as at one client; totals only, no groups.
  EXPECT_EQ(j["header"]["saturation_clients"], 3);
  const nlohmann::json& real_rates = j["header"]["real_saturated"]["rounds_connections_per_second"];
  const nlohmann::json& mock_rates = j["header"]["mock_saturated"]["rounds_connections_per_second"];
  ASSERT_EQ(real_rates.size(), 2u) << j["header"]["real_saturated"].dump();
  ASSERT_EQ(mock_rates.size(), 2u) << j["header"]["mock_saturated"].dump();
  const double saturated = std::sqrt(mock_rates[0].get<double>() / real_rates[0].get<double>() * mock_rates[1].get<double>() /
                                     real_rates[1].get<double>());
  const nlohmann::json& rate = rows["conn/s"];
  EXPECT_NEAR(rate["vs_real_saturated"].get<double>(), saturated, 1e-9 * saturated) << rate.dump();
  ASSERT_EQ(rate["vs_real_saturated_ci"].size(), 2u) << rate.dump();
  EXPECT_TRUE(rate["vs_real_saturated_verdict"].is_string()) << rate.dump();
  EXPECT_TRUE(rows["server CPU us/conn"]["vs_real_saturated"].is_number()) << rows["server CPU us/conn"].dump();
  EXPECT_TRUE(rows["work share %"]["real_saturated"].is_null()) << "no profile at saturation: no groups";
  EXPECT_NE(r.out.find("real (3 clients)"), std::string::npos) << r.out;
  // libc's exit path unless the mock's own exit handlers outweighed the
  // real exit, which a note then says, the exit's work done as exit work.
  if (w->exit_path == lifecycle::ExitPath::kUnderscoreExit) {
    EXPECT_NE(j["header"]["notes"].dump().find("exit path"), std::string::npos) << j["header"]["notes"].dump();
    EXPECT_FALSE(w->exit.empty());
  }
  const RunResult cycle = Run({"cycle", "--connections=10", "--backend-profile=" + profile});
  EXPECT_EQ(cycle.exit_code, 0) << cycle.err;
  EXPECT_NE(cycle.out.find("init_other"), std::string::npos);
  EXPECT_NE(cycle.out.find("backend profile " + profile), std::string::npos) << cycle.out;
  EXPECT_TRUE(test_util::ChildrenOf(getpid()).empty());
  ExpectNoServerLeft();
}

TEST_F(CalibrateServerTest, InterruptStopsTheServerAndRemovesIt) {
  ExpectInterruptLeavesNothing({BACKENDLAB_CLI_PATH, "calibrate", "--connections=2000", "--check=off", "--backend-profile=" + dir_ + "/p.json"});
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/p.json")) << "no profile from an interrupted fit";
}

}  // namespace
}  // namespace backendlab::tools
