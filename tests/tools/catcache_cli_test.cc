// `backendlab catcache`, run as the real binary: bad input is one clear line
// and exit 2; a small run prints every row and writes JSON and CSV; ^C stops
// a forked run with exit 130 and no child left, whether it reaches the tool
// alone or its whole process group.
#include <sys/prctl.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <ostream>
#include <sstream>
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
using test_util::ReadFile;
using test_util::RunResult;

class CatcacheCliTest : public CliTest {
 protected:
  RunResult RunCatcache(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"catcache"};
    all.insert(all.end(), args.begin(), args.end());
    return Run(all);
  }
};

struct BadInput {
  const char* arg;
  const char* message_part;
  friend void PrintTo(const BadInput& b, std::ostream* os) { *os << b.arg; }
};

class CatcacheBadInputTest : public CatcacheCliTest, public testing::WithParamInterface<BadInput> {};

TEST_P(CatcacheBadInputTest, OneLineOnStderrAndExit2) {
  const RunResult r = RunCatcache(
      WithDefaults({GetParam().arg}, {"--catcaches=palloc0", "--syscaches=pg17", "--lookups=10", "--rounds=1"}));
  EXPECT_EQ(r.exit_code, 2) << GetParam().arg << "\nstderr: " << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab catcache: ")) << GetParam().arg;
  EXPECT_NE(r.err.find(GetParam().message_part), std::string::npos) << GetParam().arg << ": " << r.err;
  EXPECT_EQ(r.out, "") << GetParam().arg;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CatcacheBadInputTest,
    testing::Values(BadInput{"--catcaches=palloc0,calloc", "unknown catcache 'calloc'"},
                    BadInput{"--catcaches=bss,mmap,bss", "'--catcaches' lists 'bss' twice"},
                    BadInput{"--syscaches=pg96", "unknown syscache 'pg96'"},
                    BadInput{"--syscaches=pg17,pg17", "'--syscaches' lists 'pg17' twice"},
                    BadInput{"--lookups=-1", "'--lookups': -1 is outside"},
                    BadInput{"--lookups=-5000", "'--lookups': -5000 is outside"},
                    BadInput{"--lookups=abc", "'abc' is not a whole number"},
                    BadInput{"--lookups=12k", "'12k' is not a whole number"},
                    BadInput{"--lookups=", "empty value"},
                    BadInput{"--rounds=0", "--rounds"},
                    BadInput{"--fork=maybe", "must be on or off"},
                    BadInput{"--fork=true", "must be on or off"},
                    BadInput{"--fork=false", "must be on or off"},
                    BadInput{"--catcaches=", "empty value"},
                    BadInput{"--catcaches=bss,,mmap", "empty list item"},
                    BadInput{"--catcache=bss", "unknown flag"},
                    BadInput{"--strategies=bss", "unknown flag"},
                    BadInput{"--profiles=pg17", "unknown flag"},
                    BadInput{"--repetitions=2", "unknown flag"},
                    BadInput{"positional", "unexpected argument"}),
    [](const testing::TestParamInfo<BadInput>& param_info) {
      std::string name;
      for (const char* c = param_info.param.arg; *c != '\0'; ++c) name += std::isalnum(*c) ? *c : '_';
      return name;
    });

TEST_F(CatcacheCliTest, SmallRunPrintsEveryCatcacheAndWritesJsonAndCsv) {
  const std::string json_path = dir_ + "/out.json", csv_path = dir_ + "/out.csv";
  const RunResult r = RunCatcache({"--rounds=2", "--lookups=300", "--json=" + json_path, "--csv=" + csv_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {"palloc0", "bss", "expansible", "mmap", "pg90", "pg17", "init us", "rehashes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json_path));
  ASSERT_EQ(j["rows"].size(), 8u);
  for (const nlohmann::json& row : j["rows"]) {
    EXPECT_EQ(row["process"], "inproc");
    EXPECT_TRUE(row.contains("catcache") && row.contains("syscache")) << row.dump();
    EXPECT_FALSE(row.contains("strategy") || row.contains("profile")) << row.dump();
    EXPECT_GT(row["entries"].get<int64_t>(), 0);
    EXPECT_EQ(row["hits"].get<int64_t>() + row["entries"].get<int64_t>(), 300) << "every lookup a hit or a load";
  }
  EXPECT_EQ(j["rows"][0]["catcache"], "palloc0");
  EXPECT_EQ(j["rows"][0]["syscache"], "pg90");
  EXPECT_EQ(j["header"]["lookups"], 300);
  EXPECT_EQ(j["header"]["rounds"], 2);
  EXPECT_EQ(j["header"]["fork"], false);
  EXPECT_TRUE(j["header"]["zeroing"].contains("pg90"));
  EXPECT_TRUE(j["header"]["expansible_vs_palloc0"].contains("pg17"));
  std::istringstream csv(ReadFile(csv_path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 9u);
  EXPECT_EQ(lines[0].rfind("catcache,syscache,process,init_us,", 0), 0u) << lines[0];
}

// An unwritable --json was found only after every round had run; now it
// fails before the first measurement: many minutes of rounds, refused at once.
TEST_F(CatcacheCliTest, UnwritableJsonPathFailsBeforeTheRun) {
  const std::string path = dir_ + "/no-such-dir/x.json";
  const RunResult r = RunCatcache({"--fork", "--rounds=1000", "--lookups=200000", "--json=" + path});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab catcache: --json=")) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "nothing measured";
  ExpectNothingCreated();
}

TEST_F(CatcacheCliTest, BareForkIsOn) {
  const RunResult r = RunCatcache({"--fork", "--rounds=1", "--lookups=10", "--catcaches=bss", "--syscaches=pg17"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("each backend a forked child"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fork-touched-parent"), std::string::npos) << r.out;
}

// Starts a forked run that would take many minutes, waits until a backend
// child is seen (or half a second), and sends SIGINT to the tool alone or to
// its process group. It must exit 130 promptly, with no child left.
void ExpectForkRunStopsOnSigint(const std::string& dir, bool to_group) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "catcache", "--fork", "--rounds=1000", "--lookups=200000"}, dir,
                              /*own_group=*/to_group);
  ASSERT_GT(tool.pid(), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool child_seen = false;
  while (!child_seen && !tool.Poll() && std::chrono::steady_clock::now() < deadline) {
    child_seen = !test_util::ChildrenOf(tool.pid()).empty();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(tool.Poll()) << "the tool exited early: " << ReadFile(dir + "/stderr");
  EXPECT_TRUE(child_seen) << "no forked backend seen in 10 s";

  ASSERT_EQ(kill(to_group ? -tool.pid() : tool.pid(), SIGINT), 0);
  const std::optional<int> status = tool.WaitFor(std::chrono::seconds(20));
  ASSERT_TRUE(status) << "still running 20 s after SIGINT";
  ASSERT_TRUE(WIFEXITED(*status)) << "killed by the signal instead of stopping cleanly: status " << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 130);
  const std::vector<pid_t> left = test_util::ChildrenOf(getpid());
  EXPECT_TRUE(left.empty()) << left.size() << " forked backend(s) outlived the tool";
  for (pid_t pid : left) {  // so that a failure here leaves nothing behind
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  const std::string err = ReadFile(dir + "/stderr");
  EXPECT_TRUE(IsOneLineStartingWith(err, "backendlab catcache: ")) << err;
  EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
}

TEST_F(CatcacheCliTest, SigintToTheToolStopsAForkRunWithExit130) {
  ExpectForkRunStopsOnSigint(dir_, /*to_group=*/false);
  ExpectTmpdirEmpty();
}

TEST_F(CatcacheCliTest, SigintToTheProcessGroupStopsAForkRunWithExit130) {
  ExpectForkRunStopsOnSigint(dir_, /*to_group=*/true);
  ExpectTmpdirEmpty();
}

}  // namespace
}  // namespace backendlab::tools
