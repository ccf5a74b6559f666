// The real backendlab binary: exit codes, one-line errors and help. Each
// command's own runs are in tests/tools/<command>_cli_test.cc.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
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

TEST_F(CliTest, UnknownCommandExitsTwo) {
  const RunResult r = Run({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab: "));
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
}

TEST_F(CliTest, NoArgumentsPrintsUsageToStderrAndExitsTwo) {
  const RunResult r = Run({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(CliTest, HelpExitsZeroWithUsageOnStdout) {
  const RunResult r = Run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("layouts"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;

  const RunResult layouts = Run({"layouts", "--help"});
  EXPECT_EQ(layouts.exit_code, 0);
  EXPECT_NE(layouts.out.find("--shared-buffers="), std::string::npos) << layouts.out;
  EXPECT_TRUE(layouts.err.empty()) << layouts.err;
}

}  // namespace
}  // namespace backendlab::tools
