// `backendlab xlog`, run as the real binary: usage errors are one line and
// exit 2, a tiny run's tables, JSON and CSV (the model labelled a model), an
// unwritable output path, and ^C.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::Lines;
using test_util::ReadFile;
using test_util::RunResult;

// Small settings: one round of 5 ms windows.
const std::vector<std::string> kTiny = {"--rounds=2", "--window-ms=5", "--readers=off,max", "--record-sizes=32"};

class XlogCliTest : public CliTest {
 protected:
  RunResult RunXlog(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"xlog"};
    all.insert(all.end(), args.begin(), args.end());
    return Run(all);
  }
};

TEST_F(XlogCliTest, UsageErrorsExitTwoWithOneLineNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> kBad = {
      {{"--variants=per-lock,foo"}, "--variants"},
      {{"--variants=per-lock,per-lock"}, "--variants"},
      {{"--variants="}, "--variants"},
      {{"--workers=0"}, "--workers"},
      {{"--workers=257"}, "--workers"},
      {{"--workers=2,02"}, "--workers"},
      {{"--workers=two"}, "--workers"},
      {{"--record-sizes=30"}, "--record-sizes"},
      {{"--record-sizes=4"}, "--record-sizes"},
      {{"--record-sizes=2097152"}, "--record-sizes"},
      {{"--readers=often"}, "--readers"},
      {{"--locks=0"}, "--locks"},
      {{"--unimportant-percent=101"}, "--unimportant-percent"},
      {{"--model-workers=1"}, "--model-workers"},
      {{"--rounds=0"}, "--rounds"},
      {{"--window-ms=0"}, "--window-ms"},
      {{"--bogus=1"}, "--bogus"},
      {{"--rounds=1", "--rounds=2"}, "--rounds"},
      {{"positional"}, "positional"},
  };
  for (const auto& [bad, flag] : kBad) {
    const RunResult r = RunXlog(WithDefaults(bad, kTiny));
    EXPECT_EQ(r.exit_code, 2) << bad[0] << "\nstderr: " << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab xlog: ")) << bad[0] << ": " << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << bad[0] << ": " << r.err;
    EXPECT_EQ(r.out, "") << bad[0];
  }
}

TEST_F(XlogCliTest, TinyRunPrintsBothTablesAndWritesJsonAndCsv) {
  const std::string json_path = dir_ + "/out.json", csv_path = dir_ + "/out.csv";
  std::vector<std::string> args = kTiny;
  args.push_back("--json=" + json_path);
  args.push_back("--csv=" + csv_path);
  const RunResult r = RunXlog(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << "no progress line when stderr is not a terminal: " << r.err;
  for (const char* v : {"per-lock", "central-spinlock", "central-atomic", "per-lock-atomic"}) {
    EXPECT_NE(r.out.find(v), std::string::npos) << v;
  }
  EXPECT_NE(r.out.find("MODEL, not a measurement"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("coherence latency"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MODEL N=96"), std::string::npos) << r.out;

  std::ifstream json_in(json_path);
  ASSERT_TRUE(json_in) << json_path;
  const nlohmann::json json = nlohmann::json::parse(json_in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded()) << ReadFile(json_path);
  const nlohmann::json& header = json["header"];
  EXPECT_EQ(header["command"], "xlog");
  EXPECT_TRUE(header["machine"].is_object());
  EXPECT_EQ(header["build_type"], BACKENDLAB_BUILD_TYPE);
  EXPECT_EQ(header["workers_are"], "threads");
  ASSERT_TRUE(header["model"].is_object());
  EXPECT_NE(header["model"]["label"].get<std::string>().find("MODEL, not a measurement"), std::string::npos);
  EXPECT_TRUE(header["model"]["coherence_latency_ns"].is_number());
  ASSERT_EQ(header["model"]["rows"].size(), 4u) << header["model"].dump();
  EXPECT_TRUE(header["model"]["rows"][0]["model_records_per_second_32"].is_number());
  EXPECT_EQ(header["model"]["rows"][0]["model_vs_per_lock_8"], 1.0);

  ASSERT_EQ(json["rows"].size(), 16u) << "4 variants x 2 workers x 2 readers";
  int reader_figures = 0, intervals = 0;
  for (const nlohmann::json& row : json["rows"]) {
    for (const char* key : {"variant", "workers", "record_size", "reader", "locks", "records_per_second",
                            "insert_ns_p50", "insert_ns_p99", "reader_ns_per_call", "records_per_second_vs_per_lock",
                            "reader_ns_vs_per_lock", "records_per_second_vs_reader_off"}) {
      EXPECT_TRUE(row.contains(key)) << key << " missing from " << row.dump();
    }
    EXPECT_TRUE(row["records_per_second"].is_number());
    if (row["reader"] == "off") {
      EXPECT_TRUE(row["reader_ns_per_call"].is_null()) << row.dump();
    }
    if (row["reader"] == "max") {
      // A 5 ms window may pass before the reader is scheduled; not all of them.
      EXPECT_TRUE(row["reader_ns_per_call"].is_number() || row["reader_ns_per_call"].is_null()) << row.dump();
      reader_figures += row["reader_ns_per_call"].is_number();
    }
    if (row["variant"] == "per-lock") {
      EXPECT_EQ(row["records_per_second_vs_per_lock"], 1.0);
      EXPECT_TRUE(row["records_per_second_vs_per_lock_ci"].is_null()) << row.dump();
    } else {
      // Paired over the rounds that both rows inserted in: a verdict always,
      // an interval around the ratio where there were two such rounds.
      const std::string verdict = row["records_per_second_vs_per_lock_verdict"].get<std::string>();
      EXPECT_TRUE(verdict == "faster" || verdict == "slower" || verdict == "~") << row.dump();
      const nlohmann::json& ci = row["records_per_second_vs_per_lock_ci"];
      if (ci.is_array()) {
        ++intervals;
        EXPECT_LE(ci[0].get<double>(), row["records_per_second_vs_per_lock"].get<double>()) << row.dump();
        EXPECT_GE(ci[1].get<double>(), row["records_per_second_vs_per_lock"].get<double>()) << row.dump();
      }
    }
  }
  EXPECT_GT(intervals, 0) << "no paired ratio over two rounds";

  EXPECT_GT(reader_figures, 0) << "a flat-out reader measured in no window at all";

  const std::vector<std::string> csv = Lines(ReadFile(csv_path));
  ASSERT_EQ(csv.size(), 17u) << ReadFile(csv_path);
  EXPECT_EQ(csv[0].rfind("variant,workers,record_size,reader,locks,", 0), 0u) << csv[0];
  const auto commas = std::count(csv[0].begin(), csv[0].end(), ',');
  for (size_t i = 1; i < csv.size(); ++i) EXPECT_EQ(std::count(csv[i].begin(), csv[i].end(), ','), commas) << csv[i];
}

TEST_F(XlogCliTest, WithoutTheCalibrationPointsTheModelSaysWhyItIsMissing) {
  const RunResult r = RunXlog({"--rounds=1", "--window-ms=2", "--readers=max", "--record-sizes=32", "--workers=2",
                               "--variants=per-lock"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no model: "), std::string::npos) << r.out;
}

TEST_F(XlogCliTest, UnwritableJsonPathFailsBeforeTheRun) {
  const std::string path = dir_ + "/no-such-dir/x.json";
  const RunResult r = RunXlog({"--rounds=1000", "--json=" + path});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab xlog: --json=")) << r.err;
  EXPECT_EQ(r.out, "") << "nothing measured";
  ExpectNothingCreated();
}

// Threads, not processes: nothing of the tool can outlive it, and the check
// says so.
TEST_F(XlogCliTest, SigintStopsALongRunWithExit130AndNothingLeft) {
  ExpectSigintStopsALongRun("xlog", {"--rounds=1000", "--window-ms=50"});
  ExpectNothingCreated();
}

}  // namespace
}  // namespace backendlab::tools
