// `backendlab pg --profile`'s views of a real server, read back by real
// readers: the second server's differential flame graph against the first,
// its pprof file by Go's pprof (a profile label per row), its trace's
// tracks, and its HTML page in headless Chromium.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "profiling/perf_record.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/skip.h"
#include "tests/tools/pg_cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::ReadFile;
using test_util::RunResult;

const std::string kBrowser = std::string(BACKENDLAB_SOURCE_DIR) + "/tests/browser";

TEST_F(PgCliTest, ProfileViewsOfTwoServersAreReadBackByPprofAndChromium) {
  if (absl::Status s = profiling::SystemWideRecordingAvailable(); !s.ok()) BACKENDLAB_SKIP(test_util::PerfRecordNeed(s)) << s.message();
  const std::string out = dir_ + "/profile", pprof = dir_ + "/p.pb.gz", trace = dir_ + "/t.json";
  const std::string page = dir_ + "/pg.html", json = dir_ + "/pg.json";
  const RunResult r = Run(Small({"pg", "--profile", "--shared-buffers=128MB,256MB", "--connections=60", "--out=" + out,
                                 "--pprof=" + pprof, "--trace=" + trace, "--trace-connections=10", "--html=" + page,
                                 "--json=" + json}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The second server against the first: its phases, its diff, what grew
  // and what shrank.
  EXPECT_NE(r.out.find("== 15/256MB against 15/128MB (perf) =="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shrank most"), std::string::npos) << r.out;
  EXPECT_EQ(access((out + "/15-256MB/diff.svg").c_str(), R_OK), 0);
  const nlohmann::json diff = nlohmann::json::parse(ReadFile(json))["header"]["profile_changes"]["15/256MB (perf)"]["diff"];
  EXPECT_EQ(diff["a"], "15/128MB");
  EXPECT_GT(diff["b_total"].get<double>(), 0) << "us of server CPU per connection";

  // The trace: the postmaster and backends of each server, their phases.
  std::map<std::string, int> spans_by_phase;
  size_t tracks = 0;
  const nlohmann::json events = nlohmann::json::parse(ReadFile(trace))["traceEvents"];
  for (const nlohmann::json& e : events) {
    if (e["ph"] == "M" && e["name"] == "process_name") ++tracks;
    if (e["ph"] == "X") ++spans_by_phase[e["name"].get<std::string>()];
  }
  EXPECT_GE(tracks, 4u) << "a postmaster and backends per server";
  EXPECT_GT(spans_by_phase["init"], 0);
  EXPECT_GT(spans_by_phase["fork"], 0);

  if (access("/usr/bin/go", X_OK) != 0) {
    BACKENDLAB_SKIP(test_util::kNeedsGo) << "no /usr/bin/go (Debian's golang-go: tools/install-deps --test)";
  }
  const RunResult tags = test_util::RunProgram({"/usr/bin/go", "tool", "pprof", "-tags", "-symbolize=none", pprof}, dir_);
  ASSERT_EQ(tags.exit_code, 0) << tags.err;
  for (const char* label : {"15/128MB", "15/256MB", "postmaster", "backend", "init", "exit"}) {
    EXPECT_NE(tags.out.find(label), std::string::npos) << label << " is no label pprof sees:\n" << tags.out;
  }

  if (access("/usr/bin/chromium", X_OK) != 0 || !std::filesystem::exists(kBrowser + "/node_modules/playwright-core")) {
    BACKENDLAB_SKIP(test_util::kNeedsChromium) << "no /usr/bin/chromium or no tests/browser/node_modules (npm ci)";
  }
  const RunResult check =
      test_util::RunProgram({"/usr/bin/node", kBrowser + "/check_page.mjs", page, json, "PostgresMain"}, dir_);
  EXPECT_EQ(check.exit_code, 0) << check.err << check.out;
  EXPECT_NE(check.out.find("\"graphs\":3"), std::string::npos) << "each row's phases and the diff: " << check.out;
  ExpectNoServerLeft();
}

}  // namespace
}  // namespace backendlab::tools
