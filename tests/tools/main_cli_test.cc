// The real backendlab binary as a whole: commands, help, exit codes, one-line
// errors whatever the input, and output that did not reach stdout.
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util/run_program.h"
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

// --version: one line with the project's version, the commit the tool was
// built from and its build type; every report's JSON header names the same
// version and commit, so a result says what made it.
TEST_F(MainCliTest, VersionNamesTheVersionAndCommitThatEveryJsonHeaderNamesToo) {
  const RunResult r = Run({"--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(r.out, m, std::regex(R"(backendlab (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}(-dirty)?|unknown), build ([^)]+)\)\n)")))
      << r.out;
  EXPECT_EQ(m[4].str(), BACKENDLAB_BUILD_TYPE);
  const std::string json = dir_ + "/layouts.json";
  const RunResult run = Run({"layouts", "--shared-buffers=128MB", "--rounds=1", "--json=" + json});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json header = nlohmann::json::parse(test_util::ReadFile(json))["header"];
  EXPECT_EQ(header["version"], m[1].str()) << header.dump();
  EXPECT_EQ(header["commit"], m[2].str()) << header.dump();
}

// Every `tools/backendlab COMMAND --flag...` quoted in README.md and docs/
// names a command and flags the tool knows (its --help lists them), so the
// docs cannot drift from the CLI. A command is read from "tools/backendlab"
// to the end of its line (lines ending in a backslash joined), a closing
// backtick or a shell operator.
TEST_F(MainCliTest, EveryCommandTheDocsQuoteHasFlagsTheToolKnows) {
  // command -> its flags; `install` is tools/backendlab's own (the wrapper's).
  std::map<std::string, std::set<std::string>> known = {{"install", {"prefix", "help"}}};
  auto flags_of = [&](const std::string& command) -> const std::set<std::string>* {
    if (auto it = known.find(command); it != known.end()) return &it->second;
    const RunResult help = Run({command, "--help"});
    if (help.exit_code != 0) return nullptr;
    std::set<std::string>& names = known[command];
    names.insert("help");
    const std::regex flag_line(R"(^\s+--([a-z0-9-]+))");
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_search(line, m, flag_line)) names.insert(m[1].str());
    }
    return &names;
  };
  std::vector<std::filesystem::path> files = {std::filesystem::path(BACKENDLAB_SOURCE_DIR) / "README.md"};
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(BACKENDLAB_SOURCE_DIR) / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  int commands = 0;
  std::vector<std::string> wrong;
  for (const std::filesystem::path& file : files) {
    const std::string text = std::regex_replace(test_util::ReadFile(file.string()), std::regex(R"(\\\n\s*)"), " ");
    const std::regex quoted(R"(tools/backendlab ([a-z][a-z-]*)([^\n`|;&>]*))");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), quoted); it != std::sregex_iterator(); ++it) {
      const std::string command = (*it)[1].str();
      const std::string where = file.filename().string() + ": tools/backendlab " + command + (*it)[2].str();
      ++commands;
      const std::set<std::string>* names = flags_of(command);
      if (names == nullptr) {
        wrong.push_back(where + "  (no such command)");
        continue;
      }
      std::istringstream words((*it)[2].str());
      for (std::string word; words >> word;) {
        if (!word.starts_with("--")) continue;
        const std::string name = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
        if (!names->contains(name)) wrong.push_back(where + "  (--" + name + " unknown)");
      }
    }
  }
  EXPECT_GE(commands, 50) << "the docs quote this many commands: too few to be the docs";
  std::string list;
  for (const std::string& w : wrong) list += "\n  " + w;
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " quoted commands the tool would refuse:" << list;
}

// Nothing in the repository cites a file outside it: the reviews, seeds and
// facts files its developers read are not shipped, so a doc or a comment
// that points there points nowhere (what it needs is written in, with its
// original source).
TEST(RepositoryTest, NothingCitesAFileOutsideIt) {
  const std::filesystem::path root(BACKENDLAB_SOURCE_DIR);
  const std::regex outside(R"((\.\./shared/|shared/(facts|reviews|seeds)/|\bfacts/[A-Z_]+\.md))");
  int files = 0;
  std::vector<std::string> citing;
  for (auto it = std::filesystem::recursive_directory_iterator(root); it != std::filesystem::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == "build" || name == ".git" || name == "node_modules" || name == ".cache")) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string ext = it->path().extension().string();
    if (!it->is_regular_file() || (ext != ".md" && ext != ".cc" && ext != ".h" && ext != ".sh" && ext != ".txt")) continue;
    ++files;
    const std::string text = test_util::ReadFile(it->path().string());
    if (std::regex_search(text, outside)) citing.push_back(std::filesystem::relative(it->path(), root).string());
  }
  EXPECT_GE(files, 100) << "too few files read to be the repository";
  std::string list;
  for (const std::string& f : citing) list += "\n  " + f;
  EXPECT_TRUE(citing.empty()) << "files citing something outside the repository:" << list;
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
