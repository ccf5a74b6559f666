// `backendlab diff` against hostile input (the 2026-12-05 probe's defects 1,
// 7 and 12): a stop while it works, stacks a million frames deep, a line
// that never ends, memory that runs out, and frame names that would drive
// the terminal.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/sanitizers.h"
#include "tests/test_util/skip.h"
#include "tests/tools/cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::IsOneLineStartingWith;
using test_util::ReadFile;
using test_util::RunResult;

class DiffCliTest : public CliTest {
 protected:
  void WriteFile(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }

  // `backendlab diff args...` run by /bin/sh after `ulimit -v KB` (its
  // address space, so that a tool that reads without bound fails instead of
  // taking the machine's memory), with `input` as its standard input's
  // producer: "PRODUCER | backendlab diff ...".
  RunResult RunLimited(int64_t limit_kb, const std::string& producer, const std::vector<std::string>& args) {
    std::string command = absl::StrCat("ulimit -v ", limit_kb, " && ", producer, producer.empty() ? "" : " | ",
                                       "exec '", BACKENDLAB_CLI_PATH, "' diff");
    for (const std::string& a : args) absl::StrAppend(&command, " '", a, "'");
    return test_util::RunProgram({"/bin/sh", "-c", command}, dir_);
  }
};

// Probe defect 1: ^C and SIGTERM were not heard until the whole diff was
// made, and the files were then written after the stop. Here B is a pipe the
// test holds open, so the tool is at work (reading) whenever the signal
// comes: it must end at once with 128 + the signal, and write nothing.
TEST_F(DiffCliTest, AStopWhileItWorksEndsItAtOnceAndWritesNothing) {
  WriteFile("a.folded", "main;work 5\n");
  for (const int signal : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sigabbrev_np(signal));
    const std::string fifo = dir_ + "/b.folded", out = dir_ + "/d";
    std::filesystem::remove(fifo);
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    // Read-write: the open does not wait for the reader, nor the reader's for us.
    const int writer = open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(writer, 0);
    const std::string part = "main;work 3\nmain;idle";  // a line not yet ended
    ASSERT_EQ(write(writer, part.data(), part.size()), static_cast<ssize_t>(part.size()));
    test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "diff", dir_ + "/a.folded", fifo, "--out=" + out}, dir_);
    ASSERT_TRUE(tool.WaitUntilCatching(signal, std::chrono::seconds(20))) << ReadFile(dir_ + "/stderr");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // into its read of B
    ASSERT_FALSE(tool.Poll()) << "it ended with B still open: " << ReadFile(dir_ + "/stderr");
    ASSERT_EQ(kill(tool.pid(), signal), 0);
    std::optional<int> status = tool.WaitFor(std::chrono::seconds(10));
    EXPECT_TRUE(status) << "still running 10 s after the signal";
    close(writer);  // B ends: a tool that did not hear the stop goes on now
    if (!status) status = tool.WaitFor(std::chrono::seconds(60));
    ASSERT_TRUE(status);
    ASSERT_TRUE(WIFEXITED(*status)) << "killed by the signal instead of stopping: status " << *status;
    EXPECT_EQ(WEXITSTATUS(*status), 128 + signal);
    const std::string err = ReadFile(dir_ + "/stderr");
    EXPECT_TRUE(IsOneLineStartingWith(err, "backendlab diff: ")) << err;
    EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
    EXPECT_EQ(ReadFile(dir_ + "/stdout"), "") << "a stopped diff prints no table";
    EXPECT_FALSE(std::filesystem::exists(out)) << "written after the stop: " << out;
    std::filesystem::remove_all(out);
  }
}

// One stack of `frames` distinct frames, root first, and its count.
std::string DeepStack(int frames, int count) {
  std::string line;
  line.reserve(static_cast<size_t>(frames) * 8);
  for (int i = 0; i < frames; ++i) absl::StrAppendFormat(&line, "%sf%x", i ? ";" : "", i);
  return absl::StrCat(line, " ", count, "\n");
}

// Probe defect 1: time grew with the square of a stack's depth (80,000
// frames 13 s; so a million frames, some 30 minutes); the graph drew every
// frame. A million frames is a few seconds' work when each frame costs the
// same (under ASan too): 120 s tells the two apart by a factor of 15 either
// way. diff.folded keeps every frame; the graph is cut at a stated depth,
// and one line says so.
TEST_F(DiffCliTest, AStackAMillionFramesDeepIsDiffedWholeAndItsGraphCutWithOneLine) {
  constexpr int kFrames = 1'000'000;
  WriteFile("deep.folded", DeepStack(kFrames, 5));
  WriteFile("b.folded", "f0;f1 3\n");
  const std::string out = dir_ + "/d";
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "diff", dir_ + "/deep.folded", dir_ + "/b.folded", "--out=" + out},
                              dir_);
  const std::optional<int> status = tool.WaitFor(std::chrono::seconds(120));
  ASSERT_TRUE(status) << "still running after 120 s";
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status << ": " << ReadFile(dir_ + "/stderr");
  const std::string printed = ReadFile(dir_ + "/stdout");
  std::vector<std::string> cut;
  for (const std::string& line : test_util::Lines(printed)) {
    if (line.find("depth") != std::string::npos) cut.push_back(line);
  }
  ASSERT_EQ(cut.size(), 1u) << printed;
  EXPECT_NE(cut[0].find(absl::StrCat(kFrames)), std::string::npos) << cut[0];
  const std::string folded = ReadFile(out + "/diff.folded");
  EXPECT_EQ(std::count(folded.begin(), folded.end(), ';'), kFrames) << "every frame of both stacks (999,999 separators and f0;f1's one)";
  const std::string svg = ReadFile(out + "/diff.svg");
  EXPECT_LT(svg.size(), size_t{4} << 20) << "drawn to its stated depth only";
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

// Probe defect 7: one endless line (/dev/zero has no newline) was read into
// memory until the allocation failed (abort, exit 134) or the OOM killer
// came. A line longer than the stated bound is refused with one line, exit
// 2, naming the file and the line; under a 2 GB address space so that the
// defect, if back, fails this test and not the machine.
TEST_F(DiffCliTest, AnEndlessLineIsRefusedInOneLine) {
  WriteFile("b.folded", "main;work 3\n");
  const std::vector<std::string> args = {"/dev/zero", dir_ + "/b.folded", "--out=" + dir_ + "/d"};
  // ASan reserves terabytes of address space: no limit there.
  const RunResult r = test_util::kAddressSanitizer ? Run(std::vector<std::string>{"diff", args[0], args[1], args[2]})
                                                   : RunLimited(2'000'000, "", args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab diff: '/dev/zero': folded stacks line 1: ")) << r.err;
  EXPECT_NE(r.err.find("MiB"), std::string::npos) << "the bound stated: " << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/d"));
}

// Probe defect 7: a failed allocation aborted the tool (exit 134 and a C++
// runtime message). Endless distinct stacks from a pipe, each line short,
// under a 500 MB address space: the memory runs out, and that is a failed
// run in one line (exit 1), naming the file.
TEST_F(DiffCliTest, RunningOutOfMemoryIsAFailedRunInOneLine) {
  if (test_util::kAddressSanitizer) {
    BACKENDLAB_SKIP("a build without AddressSanitizer") << "it reserves more address space than the limit tested";
  }
  WriteFile("b.folded", "main;work 3\n");
  const RunResult r = RunLimited(500'000, "awk 'BEGIN { for (i = 0; ; ++i) print \"f\" i \" 1\" }'",
                                 {"/dev/stdin", dir_ + "/b.folded", "--out=" + dir_ + "/d"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(IsOneLineStartingWith(r.err, "backendlab diff: ")) << r.err;
  EXPECT_NE(r.err.find("out of memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/dev/stdin"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/d"));
}

// Probe defect 12: a frame name went to the terminal raw, so BEL rang and
// ESC[31m turned the text red. It is printed escaped, as errors are.
TEST_F(DiffCliTest, ControlCharactersInFrameNamesArePrintedEscaped) {
  WriteFile("esc.folded", "main;x\x07\x1b[31mred 10\n");
  WriteFile("b.folded", "main;y 3\n");
  const RunResult r = Run({"diff", dir_ + "/esc.folded", dir_ + "/b.folded", "--out=" + dir_ + "/d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("x\\x07\\x1b[31mred"), std::string::npos) << r.out;
  for (const char c : r.out) {
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n') << "a raw control character: " << int{c};
  }
  EXPECT_NE(ReadFile(dir_ + "/d/diff.folded").find("main;x\x07\x1b[31mred 1000 0\n"), std::string::npos)
      << "the data file keeps the name as it was";
}

}  // namespace
}  // namespace backendlab::tools
