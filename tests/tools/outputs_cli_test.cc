// The files every command writes (the 2026-12-05 probe's defects 10 and 11):
// two outputs may not name one file, and a write that fails leaves no
// truncated file that would pass for a result.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/test_util/full_disk.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/skip.h"
#include "tests/tools/cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::RunResult;

class OutputsCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    std::ofstream(dir_ + "/a.folded") << "main;work 5\n";
    std::ofstream(dir_ + "/b.folded") << "main;work 3\nmain;idle 2\n";
  }
  // `command` with small settings for what `args` leave unsaid: a run wrongly
  // let through ends in seconds.
  std::vector<std::string> Small(const std::string& command, std::vector<std::string> args) {
    std::vector<std::string> defaults;
    if (command == "diff") {
      args.insert(args.begin(), {dir_ + "/a.folded", dir_ + "/b.folded"});
    } else if (command == "cycle") {
      defaults = {"--shared-buffers=128MB", "--connections=2", "--warmup=0", "--work-lookups=10"};
    } else if (command == "compare") {
      defaults = {"--layouts=hash", "--shared-buffers=128MB", "--exit-checks=off", "--connections=2",
                  "--rounds=1",     "--warmup=0",             "--work-lookups=10"};
    } else if (command == "profile") {
      defaults = {"--layout=array", "--exit-check=always", "--shared-buffers=128MB", "--connections=10",
                  "--warmup=1",     "--work-lookups=10",   "--clock=wall",          "--frequency=2000",
                  "--out=" + dir_ + "/profile"};
    } else if (command == "pg") {
      defaults = {"--connections=5", "--warmup=1", "--rounds=1", "--shared-buffers=128MB"};
    }
    args.insert(args.begin(), command);
    return WithDefaults(args, defaults);
  }
};

// Probe defect 10: `pg --json=out --html=out` ran and kept the HTML only; the
// JSON was lost without a word. Any two outputs of any command naming one
// file (by any spelling, or a file the command writes in its --out) are a
// usage error before anything runs, one line naming both flags.
TEST_F(OutputsCliTest, TwoOutputsNamingOneFileAreAUsageErrorNamingBoth) {
  const std::string x = dir_ + "/x";
  struct Case {
    std::string command;
    std::vector<std::string> args;
    std::string first, second;
  };
  const Case cases[] = {
      {"pg", {"--json=" + x, "--html=" + x}, "--json", "--html"},
      {"profile", {"--pprof=" + x, "--speedscope=" + dir_ + "/./x"}, "--pprof", "--speedscope"},
      {"profile", {"--trace=" + x, "--html=" + dir_ + "/sub/../x"}, "--trace", "--html"},
      {"cycle", {"--json=" + x, "--csv=" + x}, "--json", "--csv"},
      {"compare", {"--svg=" + x, "--html=" + x}, "--svg", "--html"},
      {"diff", {"--out=" + x, "--json=" + x}, "--json", "--out"},
      {"diff", {"--out=" + dir_ + "/d", "--json=" + dir_ + "/d/diff.svg"}, "--json", "--out"},
  };
  std::filesystem::create_directory(dir_ + "/sub");
  for (const Case& c : cases) {
    const RunResult r = Run(Small(c.command, c.args));
    SCOPED_TRACE(c.command + " " + c.args[0] + " " + c.args[1]);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab " + c.command + ": ")) << r.err;
    EXPECT_NE(r.err.find(c.first), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.second), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "nothing run";
    for (const char* made : {"/x", "/d", "/profile"}) {
      EXPECT_FALSE(std::filesystem::exists(dir_ + made)) << made;
      std::filesystem::remove_all(dir_ + made);
    }
    ExpectTmpdirEmpty();
  }
}

// calibrate writes --backend-profile besides the usual outputs: the same
// check covers it, before any server starts.
TEST_F(OutputsCliTest, CalibratesBackendProfileMayNotBeAnotherOutput) {
  const std::string x = dir_ + "/x";
  const RunResult r = Run({"calibrate", "--json=" + x, "--backend-profile=" + x});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab calibrate: --json=")) << r.err;
  EXPECT_NE(r.err.find("--backend-profile="), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(x));
  ExpectTmpdirEmpty();
}

// Probe defect 11: on a full disk the run failed (exit 1), but the truncated
// files stayed (all.svg of 8192 bytes, t.json, p.html) and looked like
// results. A write that fails leaves no file, in every writer: --out's
// files, --json, the HTML page, the exports.
TEST_F(OutputsCliTest, AFullDiskLeavesNoTruncatedFile) {
  if (geteuid() != 0) BACKENDLAB_SKIP(test_util::kNeedsRoot) << "a full disk here is a tmpfs mounted and filled";
  test_util::FullDisk full;
  const std::string f = dir_ + "/full";
  if (const std::string why = full.Mount(f); !why.empty()) BACKENDLAB_SKIP("a tmpfs mount") << why;
  const std::vector<std::vector<std::string>> runs = {
      Small("diff", {"--out=" + f + "/d"}),
      Small("diff", {"--out=" + dir_ + "/d", "--json=" + f + "/d.json"}),
      Small("cycle", {"--json=" + f + "/c.json"}),
      Small("compare", {"--html=" + f + "/p.html"}),
      Small("profile", {"--out=" + f + "/o"}),
      Small("profile", {"--trace=" + f + "/t.json"}),
  };
  for (const std::vector<std::string>& args : runs) {
    SCOPED_TRACE(absl::StrJoin(args, " "));
    const RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab " + args[0] + ": ")) << r.err;
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
    EXPECT_EQ(full.Left(), std::vector<std::string>{}) << "a failed write left its file";
    ExpectTmpdirEmpty();
  }
}

}  // namespace
}  // namespace backendlab::tools
