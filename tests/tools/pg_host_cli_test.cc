// What `pg --what-if=huge-pages` changes on the host, against a real server:
// vm.nr_hugepages put back only while it is what the run set (and the
// report says which happened), a killed run's change undone and said by
// every command that starts a real server (pg, compare --with-pg,
// calibrate), and a state file the tool cannot read named with how to
// remove it. Each test has a /run of its own and the host's vm.nr_hugepages
// to itself, put back after it (tests/test_util/host_huge_pages.h).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pgreal/huge_pages.h"
#include "tests/test_util/host_huge_pages.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/skip.h"
#include "tests/test_util/wait.h"
#include "tests/tools/pg_cli_fixture.h"
#include "tests/tools/spawned_tool.h"

namespace backendlab::tools {
namespace {

using test_util::HostNrHugePages;
using test_util::ReadFile;
using test_util::RunResult;
using test_util::SetHostNrHugePages;

bool StateFileExists() { return access(pgreal::kHugePagesStateFile, F_OK) == 0; }

void WriteStateFile(const std::string& text) {
  std::ofstream out(pgreal::kHugePagesStateFile);
  out << text;
}

// A pid no process has now (a child's, reaped).
pid_t DeadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

class PgHostTest : public PgCliTest {
 protected:
  void SetUp() override {
    PgCliTest::SetUp();
    if (IsSkipped()) return;
    if (const std::string lacking = test_util::WhatHostHugePagesTestsNeed(); !lacking.empty()) {
      GTEST_SKIP() << "needs " << lacking;
    }
    lock_.emplace();
    ASSERT_GE(lock_->before(), 0);
  }
  // vm.nr_hugepages one page higher than before the test, as a killed run
  // would have left it, with that run's state file; false if the kernel
  // would not give the page.
  bool LeaveAKilledRunsChange() {
    const int64_t before = lock_->before();
    if (!SetHostNrHugePages(before + 1) || HostNrHugePages() != before + 1) return false;
    WriteStateFile(absl::StrCat(DeadPid(), " 0 ", before, " ", before + 1, "\n"));
    return true;
  }

  std::optional<test_util::HostHugePagesLock> lock_;
};

TEST_F(PgHostTest, HugePagesAreReservedForTheRunAndPutBack) {
  const int64_t before = lock_->before();
  const RunResult r = Run(Small({"pg", "--what-if=huge-pages", "--json=" + dir_ + "/out.json"}));
  if (r.exit_code == 1 && r.err.find("the kernel gave") != std::string::npos) {
    GTEST_SKIP() << "needs huge pages the kernel can give: " << r.err;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HostNrHugePages(), before) << "vm.nr_hugepages put back";
  const nlohmann::json rows = nlohmann::json::parse(ReadFile(dir_ + "/out.json"))["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["what_if"], "huge-pages");
  EXPECT_NE(r.out.find("vm.nr_hugepages was grown by"), std::string::npos) << r.out;
  EXPECT_FALSE(StateFileExists());
  ExpectNoServerLeft();
}

// Defect 3 of the 2026-12-05 reliability review: a value set by someone
// else while the run held its pages was overwritten with the one from
// before the run, and the report said "put back".
TEST_F(PgHostTest, AChangeMadeDuringTheRunIsLeftAndTheReportSaysSo) {
  const int64_t before = lock_->before();
  std::vector<std::string> args = Small({"pg", "--what-if=huge-pages"});
  args.insert(args.begin(), BACKENDLAB_CLI_PATH);
  test_util::SpawnedTool tool(args, dir_);
  ASSERT_TRUE(test_util::WaitUntil([&] { return HostNrHugePages() > before || tool.Poll().has_value(); }));
  // The run stopped while the change is made: however fast this machine
  // runs it, it goes on after the change.
  ASSERT_EQ(kill(tool.pid(), SIGSTOP), 0);
  ASSERT_FALSE(tool.Poll().has_value()) << "the run ended before it grew the pool: " << ReadFile(dir_ + "/stderr");
  const int64_t theirs = HostNrHugePages() + 3;  // an administrator's, made during the run
  const bool set = SetHostNrHugePages(theirs);
  ASSERT_EQ(kill(tool.pid(), SIGCONT), 0);
  ASSERT_TRUE(set);
  if (HostNrHugePages() != theirs) GTEST_SKIP() << "needs 3 more huge pages the kernel can give";
  const std::optional<int> status = tool.WaitFor(test_util::kPatience);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << ReadFile(dir_ + "/stderr");
  EXPECT_EQ(HostNrHugePages(), theirs) << "the change made during the run was undone";
  const std::string out = ReadFile(dir_ + "/stdout");
  EXPECT_NE(out.find(absl::StrCat("left at ", theirs)), std::string::npos) << out;
  EXPECT_EQ(out.find("put back"), std::string::npos) << out;
  EXPECT_FALSE(StateFileExists());
  ExpectNoServerLeft();
}

// Defect 8: after a killed huge-pages run, compare --with-pg and calibrate
// put vm.nr_hugepages back without a word (only pg printed the line).
TEST_F(PgHostTest, CompareAndCalibrateSayWhatAKilledRunLeftAndTheyPutBack) {
  const int64_t before = lock_->before();
  if (!LeaveAKilledRunsChange()) GTEST_SKIP() << "needs a huge page the kernel can give";
  const RunResult compare = Run({"compare", "--with-pg=on", "--layouts=array", "--exit-checks=always",
                                 "--shared-buffers=128MB", "--rounds=1", "--connections=5"});
  EXPECT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_NE(compare.out.find(absl::StrCat("vm.nr_hugepages put back to ", before)), std::string::npos) << compare.out;
  EXPECT_EQ(HostNrHugePages(), before);
  EXPECT_FALSE(StateFileExists());

  // calibrate runs for minutes: once its server is up the line is out, and
  // a ^C ends it.
  if (!LeaveAKilledRunsChange()) GTEST_SKIP() << "needs a huge page the kernel can give";
  test_util::SpawnedTool calibrate({BACKENDLAB_CLI_PATH, "calibrate", "--check=off", "--saturation=off",
                                    "--backend-profile=" + dir_ + "/profile.json"},
                                   dir_);
  ASSERT_NE(WaitForProcessNamed("postgres", calibrate), 0) << "no server started: " << ReadFile(dir_ + "/stderr");
  ASSERT_TRUE(calibrate.WaitUntilCatching(SIGINT, test_util::kPatience));
  ASSERT_EQ(kill(calibrate.pid(), SIGINT), 0);
  ASSERT_TRUE(calibrate.WaitFor(test_util::kPatience).has_value());
  const std::string out = ReadFile(dir_ + "/stdout");
  EXPECT_NE(out.find(absl::StrCat("vm.nr_hugepages put back to ", before)), std::string::npos) << out;
  EXPECT_EQ(HostNrHugePages(), before);
  EXPECT_FALSE(StateFileExists());
  ExpectNoServerLeft();
}

// Defect 9: a state file the tool cannot read made every later huge-pages
// run fail after initdb with "File exists" and no advice.
TEST_F(PgHostTest, AnUnreadableStateFileIsNamedWithHowToRemoveIt) {
  const int64_t before = lock_->before();
  if (!SetHostNrHugePages(before + 1) || HostNrHugePages() != before + 1) {
    GTEST_SKIP() << "needs a huge page the kernel can give";
  }
  WriteStateFile("garbage\n");
  const RunResult r = Run(Small({"pg", "--what-if=huge-pages"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab pg: ")) << r.err;
  EXPECT_NE(r.err.find(absl::StrCat("rm ", pgreal::kHugePagesStateFile)), std::string::npos) << r.err;
  EXPECT_TRUE(StateFileExists()) << "kept: it may be all that says what the value was";
  EXPECT_EQ(HostNrHugePages(), before + 1) << "nothing changed";
  ExpectNoServerLeft();
}

// An empty state file (a kill between its creation and its write, before
// any change) is removed, and the run goes on.
TEST_F(PgHostTest, AnEmptyStateFileIsRemovedAndTheRunGoesOn) {
  const int64_t before = lock_->before();
  WriteStateFile("");
  const RunResult r = Run(Small({"pg", "--what-if=huge-pages"}));
  if (r.exit_code == 1 && r.err.find("the kernel gave") != std::string::npos) {
    GTEST_SKIP() << "needs huge pages the kernel can give: " << r.err;
  }
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(StateFileExists());
  EXPECT_EQ(HostNrHugePages(), before);
  ExpectNoServerLeft();
}

}  // namespace
}  // namespace backendlab::tools
