// `backendlab layouts`, run as the real binary: usage errors are one line and
// exit 2, a tiny run's JSON and CSV, an unwritable output path, and ^C.
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/lifecycle/child_processes.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/spawned_tool.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::Lines;
using test_util::ReadFile;
using test_util::RunResult;

class LayoutsCliTest : public CliTest {
 protected:
  RunResult RunLayouts(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"layouts"};
    all.insert(all.end(), args.begin(), args.end());
    return Run(all);
  }
};

TEST_F(LayoutsCliTest, UsageErrorsExitTwoWithOneLine) {
  const std::vector<std::vector<std::string>> kBad = {
      {"--layouts=foo"},
      {"--layouts=hash,hash"},
      {"--layouts=array,hash,array"},
      {"--shared-buffers=0"},
      {"--shared-buffers=-1"},
      {"--shared-buffers=12XB"},
      {"--shared-buffers=8 GB"},
      {"--shared-buffers=8 "},
      {"--shared-buffers=16TB"},
      {"--shared-buffers=128MB,,1GB"},
      {"--shared-buffers=1GB,1024MB"},
      {"--kernel=fast"},
      {"--rounds=0"},
      {"--rounds=abc"},
      {"--rounds=1001"},
      {"--repetitions=2"},
      {"--bogus=1"},
      {"positional"},
      {"--layouts="},
      {"--layouts"},
      {"--rounds=1", "--rounds=2"},
  };
  for (const std::vector<std::string>& bad : kBad) {
    const RunResult r = RunLayouts(WithDefaults(bad, {"--shared-buffers=128MB", "--rounds=1", "--layouts=hash"}));
    EXPECT_EQ(r.exit_code, 2) << bad[0] << "\nstderr: " << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab layouts: ")) << bad[0];
    EXPECT_EQ(r.out, "") << bad[0];
  }
}

TEST_F(LayoutsCliTest, DuplicatedListEntriesAreNamed) {
  const RunResult r = RunLayouts({"--shared-buffers=128MB", "--rounds=1", "--layouts=hash,bytes,hash"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'--layouts' lists 'hash' twice"), std::string::npos) << r.err;
  // The same size spelled twice is caught by the experiment, which compares values.
  const RunResult same = RunLayouts({"--shared-buffers=1GB,1024MB", "--rounds=1", "--layouts=hash"});
  EXPECT_EQ(same.exit_code, 2);
  EXPECT_NE(same.err.find("1GB given twice"), std::string::npos) << same.err;
}

TEST_F(LayoutsCliTest, TinyRunWritesJsonAndCsv) {
  const std::string json_path = dir_ + "/out.json", csv_path = dir_ + "/out.csv";
  const RunResult r = RunLayouts({"--shared-buffers=128MB", "--rounds=1", "--json=" + json_path, "--csv=" + csv_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* layout : {"array", "bytes", "hash"}) EXPECT_NE(r.out.find(layout), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 interleaved rounds"), std::string::npos) << r.out;

  std::ifstream json_in(json_path);
  ASSERT_TRUE(json_in) << json_path;
  const nlohmann::json json = nlohmann::json::parse(json_in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded()) << "not valid JSON: " << ReadFile(json_path);
  ASSERT_TRUE(json.contains("header"));
  EXPECT_TRUE(json["header"]["machine"].is_object());
  EXPECT_EQ(json["header"]["build_type"], BACKENDLAB_BUILD_TYPE);
  EXPECT_EQ(json["header"]["rounds"], 1);
  EXPECT_FALSE(json["header"].contains("repetitions"));
  EXPECT_TRUE(json["header"]["ratios"].contains("exit_check_array_over_hash")) << json["header"].dump();
  EXPECT_TRUE(json["header"]["ratios"]["exit_check_array_over_hash"].contains("128MB"));
  EXPECT_TRUE(json["header"]["ratios"]["exit_check_array_over_hash"]["128MB_ci"].is_null()) << "one round: no interval";
  EXPECT_EQ(json["header"]["ratios"]["exit_check_array_over_hash"]["128MB_verdict"], "~");

  ASSERT_TRUE(json["rows"].is_array());
  ASSERT_EQ(json["rows"].size(), 3u);
  const char* kLayouts[] = {"array", "bytes", "hash"};
  // 16,384 counts of 4 and 1 bytes + the table object (its mapping's pointer and length, NBuffers, ...)
  const int64_t kBytesPerBackend[] = {65'560, 16'448, 128};
  for (size_t i = 0; i < 3; ++i) {
    const nlohmann::json& row = json["rows"][i];
    SCOPED_TRACE(kLayouts[i]);
    for (const char* key : {"layout", "shared_buffers_bytes", "nbuffers", "pin_unpin_ns_held_1", "exit_check_us",
                            "exit_minor_faults", "scan_gbps", "read_baseline_gbps"}) {
      EXPECT_TRUE(row.contains(key)) << key << " missing from " << row.dump();
    }
    EXPECT_EQ(row["layout"], kLayouts[i]);
    EXPECT_EQ(row["shared_buffers_bytes"], 134'217'728);
    EXPECT_EQ(row["nbuffers"], 16'384);
    EXPECT_EQ(row["bytes_per_backend"], kBytesPerBackend[i]);
    EXPECT_TRUE(row["pin_unpin_ns_held_1"].is_number());
    EXPECT_TRUE(row["exit_check_us"].is_number());
    EXPECT_TRUE(row["exit_minor_faults"].is_number());
    if (i < 2) {
      EXPECT_TRUE(row["scan_gbps"].is_number()) << row.dump();
      EXPECT_TRUE(row["read_baseline_gbps"].is_number()) << row.dump();
    } else {
      // `hash` has no table to scan.
      EXPECT_TRUE(row["scan_gbps"].is_null()) << row.dump();
      EXPECT_TRUE(row["read_baseline_gbps"].is_null()) << row.dump();
    }
  }

  const std::vector<std::string> csv = Lines(ReadFile(csv_path));
  ASSERT_EQ(csv.size(), 4u) << ReadFile(csv_path);
  EXPECT_EQ(csv[0].rfind("layout,", 0), 0u) << csv[0];
  EXPECT_NE(csv[0].find("scan_gbps"), std::string::npos) << csv[0];
  const auto commas = std::count(csv[0].begin(), csv[0].end(), ',');
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(csv[i].rfind(std::string(kLayouts[i - 1]) + ",", 0), 0u) << csv[i];
    EXPECT_EQ(std::count(csv[i].begin(), csv[i].end(), ','), commas) << csv[i];
  }
}

// An unwritable --json was found only after every round had run; now it
// fails before the first measurement: hours of rounds, refused at once.
TEST_F(LayoutsCliTest, UnwritableJsonPathFailsBeforeTheRun) {
  const std::string path = dir_ + "/no-such-dir/x.json";
  const RunResult r = RunLayouts({"--shared-buffers=1GB,8GB", "--rounds=1000", "--json=" + path});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab layouts: --json=")) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "nothing measured";
  ExpectNothingCreated();
}

TEST_F(LayoutsCliTest, SigintStopsALongRunWithExit130) {
  ExpectSigintStopsALongRun("layouts", {"--shared-buffers=1GB,8GB", "--rounds=1000"});
}

}  // namespace
}  // namespace backendlab::tools
