// The real backendlab binary: exit codes, one-line errors, help, and a tiny `layouts` run's JSON and CSV.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"
#include "nlohmann/json.hpp"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::Lines;
using test_util::ReadFile;
using test_util::RunResult;

// Each test gets a private directory for the child's output and its files.
class CliTest : public test_util::TempDirTest {
 protected:
  RunResult Run(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {BACKENDLAB_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_util::RunProgram(std::move(argv), dir_);
  }
};

// Small settings for the flags a bad-input case does not set, so that a bad
// input wrongly accepted fails quickly instead of running the full comparison.
std::vector<std::string> WithSmallDefaults(std::vector<std::string> args) {
  for (const char* flag : {"--shared-buffers=128MB", "--repetitions=1", "--layouts=hash"}) {
    const std::string name = std::string(flag).substr(0, std::string(flag).find('=') + 1);
    const bool given =
        std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.rfind(name, 0) == 0; });
    if (!given) args.push_back(flag);
  }
  return args;
}

TEST_F(CliTest, LayoutsUsageErrorsExitTwoWithOneLine) {
  const std::vector<std::vector<std::string>> kBad = {
      {"--layouts=foo"},
      {"--shared-buffers=0"},
      {"--shared-buffers=-1"},
      {"--shared-buffers=12XB"},
      {"--shared-buffers=8 GB"},
      {"--shared-buffers=8 "},
      {"--shared-buffers=16TB"},
      {"--shared-buffers=128MB,,1GB"},
      {"--kernel=fast"},
      {"--repetitions=0"},
      {"--repetitions=abc"},
      {"--repetitions=1001"},
      {"--bogus=1"},
      {"positional"},
      {"--layouts="},
      {"--layouts"},
      {"--repetitions=1", "--repetitions=2"},
  };
  for (const std::vector<std::string>& bad : kBad) {
    std::vector<std::string> args = {"layouts"};
    const std::vector<std::string> rest = WithSmallDefaults(bad);
    args.insert(args.end(), rest.begin(), rest.end());
    const RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << "\nstderr: " << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab layouts: ")) << bad[0];
  }
}

TEST_F(CliTest, TinyLayoutsRunWritesJsonAndCsv) {
  const std::string json_path = dir_ + "/out.json", csv_path = dir_ + "/out.csv";
  const RunResult r = Run({"layouts", "--shared-buffers=128MB", "--repetitions=1", "--json=" + json_path,
                           "--csv=" + csv_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* layout : {"array", "bytes", "hash"}) EXPECT_NE(r.out.find(layout), std::string::npos) << r.out;

  std::ifstream json_in(json_path);
  ASSERT_TRUE(json_in) << json_path;
  const nlohmann::json json = nlohmann::json::parse(json_in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded()) << "not valid JSON: " << ReadFile(json_path);
  ASSERT_TRUE(json.contains("header"));
  EXPECT_TRUE(json["header"].contains("machine"));
  EXPECT_TRUE(json["header"]["machine"].is_object());
  ASSERT_TRUE(json["header"].contains("build_type"));
  EXPECT_EQ(json["header"]["build_type"], BACKENDLAB_BUILD_TYPE);

  ASSERT_TRUE(json["rows"].is_array());
  ASSERT_EQ(json["rows"].size(), 3u);
  const char* kLayouts[] = {"array", "bytes", "hash"};
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

TEST_F(CliTest, UnwritableJsonPathExitsOneWithOneLine) {
  const RunResult r =
      Run({"layouts", "--shared-buffers=128MB", "--repetitions=1", "--layouts=hash", "--json=/nonexistent-dir/x.json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab layouts: "));
  EXPECT_NE(r.err.find("/nonexistent-dir/x.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace backendlab::tools
