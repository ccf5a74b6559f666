// `backendlab catcache`: bad input is one clear line and exit 2; a small run,
// in-process and forked, prints every row, writes JSON and CSV, and leaves no
// child and no shared mapping behind, also when it fails.
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "catcache/catcache.h"
#include "catcache/syscache_profile.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"
#include "tools/catcache_command.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::ReadFile;
using test_util::RunResult;

class CatcacheCliTest : public test_util::TempDirTest {
 protected:
  RunResult Run(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {BACKENDLAB_CLI_PATH, "catcache"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_util::RunProgram(std::move(argv), dir_);
  }
};

// Small settings for the flags a bad-input case does not set, so that a bad
// input wrongly accepted fails quickly instead of running the full comparison.
std::vector<std::string> WithSmallDefaults(std::vector<std::string> args) {
  for (const char* flag : {"--strategies=palloc0", "--profiles=pg17", "--lookups=10", "--repetitions=1"}) {
    const std::string name = std::string(flag).substr(0, std::string(flag).find('=') + 1);
    const bool given =
        std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.rfind(name, 0) == 0; });
    if (!given) args.push_back(flag);
  }
  return args;
}

struct BadInput {
  const char* arg;
  const char* message_part;
  friend void PrintTo(const BadInput& b, std::ostream* os) { *os << b.arg; }
};

class CatcacheBadInputTest : public CatcacheCliTest, public testing::WithParamInterface<BadInput> {};

TEST_P(CatcacheBadInputTest, OneLineOnStderrAndExit2) {
  const RunResult r = Run(WithSmallDefaults({GetParam().arg}));
  EXPECT_EQ(r.exit_code, 2) << GetParam().arg << "\nstderr: " << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab catcache: ")) << GetParam().arg;
  EXPECT_NE(r.err.find(GetParam().message_part), std::string::npos) << GetParam().arg << ": " << r.err;
  EXPECT_EQ(r.out, "") << GetParam().arg;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CatcacheBadInputTest,
    testing::Values(BadInput{"--strategies=palloc0,calloc", "unknown strategy 'calloc'"},
                    BadInput{"--profiles=pg96", "unknown profile 'pg96'"},
                    BadInput{"--lookups=-1", "'--lookups': -1 is outside"},
                    BadInput{"--lookups=-5000", "'--lookups': -5000 is outside"},
                    BadInput{"--lookups=abc", "'abc' is not a whole number"},
                    BadInput{"--lookups=12k", "'12k' is not a whole number"},
                    BadInput{"--lookups=", "empty value"},
                    BadInput{"--repetitions=0", "--repetitions"},
                    BadInput{"--fork=maybe", "not true or false"},
                    BadInput{"--strategies=", "empty value"},
                    BadInput{"--strategies=bss,,mmap", "empty list item"},
                    BadInput{"--strategy=bss", "unknown flag"},
                    BadInput{"positional", "unexpected argument"}),
    [](const testing::TestParamInfo<BadInput>& param_info) {
      std::string name;
      for (const char* c = param_info.param.arg; *c != '\0'; ++c) name += std::isalnum(*c) ? *c : '_';
      return name;
    });

TEST_F(CatcacheCliTest, SmallRunPrintsEveryStrategyAndWritesJsonAndCsv) {
  const std::string json_path = dir_ + "/out.json", csv_path = dir_ + "/out.csv";
  const RunResult r = Run({"--repetitions=2", "--lookups=300", "--json=" + json_path, "--csv=" + csv_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {"palloc0", "bss", "expansible", "mmap", "pg90", "pg17", "init us", "rehashes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json_path));
  ASSERT_EQ(j["rows"].size(), 8u);
  for (const nlohmann::json& row : j["rows"]) {
    EXPECT_EQ(row["process"], "inproc");
    EXPECT_GT(row["entries"].get<int64_t>(), 0);
    EXPECT_EQ(row["hits"].get<int64_t>() + row["entries"].get<int64_t>(), 300) << "every lookup a hit or a load";
  }
  EXPECT_EQ(j["header"]["lookups"], 300);
  std::istringstream csv(ReadFile(csv_path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 9u);
  EXPECT_EQ(lines[0].rfind("strategy,profile,process,init_us,", 0), 0u) << lines[0];
}

// Lines of /proc/self/maps for shared anonymous memory: the page a forked
// backend reports through.
int SharedAnonymousMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find("/dev/zero") != std::string::npos;
  return n;
}

void ExpectNoChildLeft() {
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1) << "a forked backend was left unreaped";
  EXPECT_EQ(errno, ECHILD);
}

TEST(CatcacheForkTest, ForkRunsReapEveryChildAndUnmapTheReportPage) {
  const int mappings_before = SharedAnonymousMappings();
  std::ostringstream out;
  const std::vector<std::string> args = {"--fork", "--repetitions=2", "--lookups=200", "--strategies=palloc0,bss",
                                         "--profiles=pg17"};
  absl::Status status = RunCatcacheCommand(args, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_NE(out.str().find("fork-touched-parent"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("each backend a forked child"), std::string::npos);
  ExpectNoChildLeft();
  EXPECT_EQ(SharedAnonymousMappings(), mappings_before);
}

TEST(CatcacheForkTest, AFailedForkRunLeavesNothingBehind) {
  // While this process holds the bss region, the fork run cannot put it in a
  // parent's state: the run fails, as a run (not a usage) error.
  absl::StatusOr<catcache::SyscacheProfile> pg17 = catcache::BuiltinProfile("pg17");
  ASSERT_TRUE(pg17.ok());
  absl::StatusOr<std::unique_ptr<catcache::CatCacheSet>> holder =
      catcache::CatCacheSet::Create(catcache::BucketStrategy::kBss, *pg17);
  ASSERT_TRUE(holder.ok()) << holder.status();
  const int mappings_before = SharedAnonymousMappings();
  std::ostringstream out;
  const std::vector<std::string> args = {"--fork", "--repetitions=1", "--lookups=10", "--strategies=palloc0",
                                         "--profiles=pg17"};
  absl::Status status = RunCatcacheCommand(args, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_FALSE(absl::IsInvalidArgument(status)) << "a run failure exits 1, not 2";
  ExpectNoChildLeft();
  EXPECT_EQ(SharedAnonymousMappings(), mappings_before);
}

}  // namespace
}  // namespace backendlab::tools
