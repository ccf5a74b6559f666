// `backendlab calibrate` against Debian's PostgreSQL 15: bad input, and a
// tiny fit whose profile file `cycle --backend-profile` then runs with.
#include <unistd.h>

#include <filesystem>
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
  const RunResult r = Run({"calibrate", "--connections=20", "--warmup=2", "--rounds=1", "--iterations=1", "--check=off",
                           "--backend-profile=" + profile, "--json=" + json});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("server CPU us/conn"), std::string::npos) << r.out;
  absl::StatusOr<lifecycle::BackendWeight> w = lifecycle::LoadBackendWeight(profile);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->libraries.empty()) << "the real postmaster's libraries";
  EXPECT_GT(w->startup.read_file_bytes, 0) << "the relcache init files' size";
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json));
  EXPECT_GT(j["header"]["real"]["cpu_us"].get<double>(), 0);
  EXPECT_GT(j["header"]["mock"]["cpu_us"].get<double>(), 0);
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
