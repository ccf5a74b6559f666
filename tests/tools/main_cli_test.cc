// The real backendlab binary as a whole: commands, help, exit codes, one-line
// errors whatever the input, and output that did not reach stdout.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tools/cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::RunResult;
using test_util::Stdout;

using MainCliTest = CliTest;

TEST_F(MainCliTest, UnknownCommandExitsTwo) {
  const RunResult r = Run({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab: "));
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
}

TEST_F(MainCliTest, NoArgumentsIsOneLineAndExitTwo) {
  const RunResult r = Run({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab: no command given (try: backendlab --help)")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(MainCliTest, HelpExitsZeroWithUsageOnStdout) {
  const RunResult r = Run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage"), std::string::npos) << r.out;
  for (const char* command : {"compare", "cycle", "profile", "layouts", "catcache"}) {
    EXPECT_NE(r.out.find(command), std::string::npos) << r.out;
    const RunResult help = Run({command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_NE(help.out.find("usage: backendlab " + std::string(command)), std::string::npos) << help.out;
    EXPECT_TRUE(help.err.empty()) << help.err;
  }
}

// Defect 11: a newline in a flag value gave a two-line error. Every command,
// whichever part of it words the error, prints one line.
TEST_F(MainCliTest, ControlCharactersInInputAreEscapedOnOneLine) {
  const std::vector<std::vector<std::string>> kBad = {
      {"fro\nbnicate"},
      {"cycle", "--layout=ha\nsh"},
      {"cycle", "--duration=1\ns"},
      {"cycle", "--bo\ngus=1"},
      {"cycle", "--connections=1\r0"},
      {"compare", "--layouts=ha\nsh"},
      {"compare", "--shared-buffers=1\nGB"},
      {"compare", "stray\narg"},
      {"layouts", "--layouts=ha\nsh"},
      {"catcache", "--bo\ngus=1"},
      {"profile", "--layout=ha\nsh"},
  };
  for (const std::vector<std::string>& args : kBad) {
    const RunResult r = Run(args);
    const std::string prefix = args.size() == 1 ? "backendlab: " : "backendlab " + args[0] + ": ";
    EXPECT_EQ(r.exit_code, 2) << args.back() << "\nstderr: " << r.err;
    EXPECT_TRUE(IsOneLineStartingWith(r.err, prefix)) << args.back();
    EXPECT_NE(r.err.find('\\'), std::string::npos) << "the control character shown escaped: " << r.err;
  }
}

// Defect 8: a failed write to stdout (a full disk, a closed stdout) exited 0.
TEST_F(MainCliTest, StdoutThatCannotBeWrittenIsAFailedRun) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--help"},
                                             {"cycle", "--help"},
                                             {"compare", "--layouts=hash", "--exit-checks=off", "--shared-buffers=128MB",
                                              "--connections=2", "--rounds=1", "--warmup=0", "--work-lookups=10"}}) {
    const std::string prefix = args[0] == "--help" ? "backendlab: " : "backendlab " + args[0] + ": ";
    const RunResult full = Run(args, Stdout::kDevFull);
    EXPECT_EQ(full.exit_code, 1) << args[0] << " stderr: " << full.err;
    EXPECT_TRUE(IsOneLineStartingWith(full.err, prefix + "cannot write to standard output"));
    EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;

    const RunResult closed = Run(args, Stdout::kClosed);
    EXPECT_EQ(closed.exit_code, 1) << args[0] << " stderr: " << closed.err;
    EXPECT_TRUE(IsOneLineStartingWith(closed.err, "backendlab: cannot write to standard output"));

    // `backendlab ... | head -0`: a reader that went away is a failed write,
    // said in one line, not a death by SIGPIPE (exit 141).
    const RunResult broken = Run(args, Stdout::kBrokenPipe);
    EXPECT_EQ(broken.exit_code, 1) << args[0] << " stderr: " << broken.err;
    EXPECT_TRUE(IsOneLineStartingWith(broken.err, prefix + "cannot write to standard output"));
    EXPECT_NE(broken.err.find("Broken pipe"), std::string::npos) << broken.err;
  }
  ExpectTmpdirEmpty();
}

}  // namespace
}  // namespace backendlab::tools
