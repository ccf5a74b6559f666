// The real `backendlab coverage-study`: its rows, its verdict counts, a
// compare run's rounds resampled, and its bad input.
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::ReadFile;
using test_util::RunResult;

using CoverageCliTest = CliTest;

class CoverageBadInputTest : public CliTest, public testing::WithParamInterface<std::vector<std::string>> {};

TEST_P(CoverageBadInputTest, OneLineOnStderrAndExit2) {
  // A file that is JSON but not a compare run's, and one that is not JSON.
  std::ofstream(dir_ + "/other.json") << R"({"header": {"command": "latch"}, "rows": []})";
  std::ofstream(dir_ + "/broken.json") << "{";
  std::vector<std::string> args = {"coverage-study", "--runs=10"};
  args.insert(args.end(), GetParam().begin(), GetParam().end());
  const RunResult r = Run(args);
  EXPECT_EQ(r.exit_code, 2) << "stderr: " << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab coverage-study: ")) << r.err;
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(Flags, CoverageBadInputTest,
                         testing::Values(std::vector<std::string>{"--runs=abc"}, std::vector<std::string>{"--runs=9"},
                                         std::vector<std::string>{"--rounds=5"}, std::vector<std::string>{"--same-within=0"},
                                         std::vector<std::string>{"--same-within=50%"}, std::vector<std::string>{"--sd=0"},
                                         std::vector<std::string>{"--rounds-of=missing.json"},
                                         std::vector<std::string>{"--rounds-of=other.json"},
                                         std::vector<std::string>{"--rounds-of=broken.json"},
                                         std::vector<std::string>{"--noise=normal"}));

// Every row's verdicts add up to its runs; the simulated rows are there at
// a true ratio of 1 and of 1 + the band; a compare run's own ratios with
// enough rounds are rows too, named after them.
TEST_F(CoverageCliTest, RowsCountEveryRunAndResampleACompareRunsRounds) {
  const std::string compare_json = dir_ + "/compare.json", json = dir_ + "/coverage.json";
  // 100 rounds that decide nothing: a band far narrower than the rounds resolve.
  const RunResult c = Run({"compare", "--layouts=array", "--exit-checks=always,assert", "--shared-buffers=128MB",
                           "--connections=1", "--warmup=0", "--work-lookups=10", "--rounds=100", "--same-within=0.01%",
                           "--json=" + compare_json});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const RunResult r = Run({"coverage-study", "--runs=50", "--rounds=100", "--rounds-of=" + compare_json, "--json=" + json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << ReadFile(json);
  EXPECT_EQ(j["header"]["command"], "coverage-study");
  EXPECT_EQ(j["header"]["looks"], nlohmann::json::parse("[6, 12, 24, 48, 96, 100]"));
  std::vector<std::string> noises;
  for (const nlohmann::json& row : j["rows"]) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["runs"], 50);
    EXPECT_EQ(row["faster"].get<int>() + row["slower"].get<int>() + row["same"].get<int>() + row["undecided"].get<int>(), 50);
    EXPECT_GE(row["covered_percent"].get<double>(), 0);
    EXPECT_LE(row["covered_percent"].get<double>(), 100);
    EXPECT_LE(row["mean_rounds"].get<double>(), 100);
    EXPECT_GE(row["mean_rounds"].get<double>(), 6);
    noises.push_back(row["noise"]);
  }
  ASSERT_EQ(noises.size(), 8u) << "normal, t, and the compare run's CPU and conn/s ratios, each at 1 and 1.02";
  EXPECT_EQ(noises[0], "normal, sd 5 %");
  EXPECT_EQ(noises[2], "t 3 df, sd 5 %");
  EXPECT_EQ(noises[4], "array/assert at 128MB CPU (100 rounds)");
  EXPECT_EQ(noises[6], "array/assert at 128MB conn/s (100 rounds)");
  EXPECT_EQ(j["rows"][0]["true_ratio"], 1.0);
  EXPECT_EQ(j["rows"][1]["true_ratio"], 1.02);
  EXPECT_NE(r.out.find("covered %: runs whose interval at the stop holds the true ratio"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace backendlab::tools
