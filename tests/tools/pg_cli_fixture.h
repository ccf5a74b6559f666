// The fixture of every test that runs the tool against a real PostgreSQL
// (Debian's 15, installed by tools/install-deps): its server's directory
// reachable by the server's user, and that nothing of a server outlives
// the tool.
#ifndef BACKENDLAB_TESTS_TOOLS_PG_CLI_FIXTURE_H_
#define BACKENDLAB_TESTS_TOOLS_PG_CLI_FIXTURE_H_

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/spawned_tool.h"
#include "tests/test_util/wait.h"
#include "tests/test_util/skip.h"

namespace backendlab::tools {

inline bool HaveServer() { return access("/usr/lib/postgresql/15/bin/postgres", X_OK) == 0; }
inline bool HavePgBouncer() { return access("/usr/sbin/pgbouncer", X_OK) == 0; }


// Processes whose command line mentions `text` (a server's directory is on
// its postmaster's command line).
inline std::vector<pid_t> ProcessesMentioning(const std::string& text) {
  std::vector<pid_t> found;
  DIR* dir = opendir("/proc");
  while (const dirent* e = dir != nullptr ? readdir(dir) : nullptr) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::stringstream s;
    s << in.rdbuf();
    if (s.str().find(text) != std::string::npos) found.push_back(std::atoi(e->d_name));
  }
  if (dir != nullptr) closedir(dir);
  return found;
}

// The parent of `pid` (/proc/PID/stat's fourth field), 0 if unknown.
inline pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const size_t close = line.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  char state;
  pid_t parent = 0;
  rest >> state >> parent;
  return parent;
}

// System V segments whose creator was `pid` (/proc/sysvipc/shm: key shmid
// perms size cpid ...). A postmaster's segment must go with it.
inline std::vector<int> SegmentsCreatedBy(pid_t pid) {
  std::vector<int> found;
  std::ifstream in("/proc/sysvipc/shm");
  std::string line;
  std::getline(in, line);  // the column names
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    long key = 0, shmid = 0, perms = 0, size = 0, cpid = 0;
    if (fields >> key >> shmid >> perms >> size >> cpid && cpid == pid) found.push_back(static_cast<int>(shmid));
  }
  return found;
}

class PgCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    if (!HaveServer()) {
      BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << "no PostgreSQL 15 server (tools/install-deps installs postgresql-15)";
    }
    // As root the server runs as `postgres`, which must reach its directory
    // inside TMPDIR: traversable, not listable.
    if (geteuid() == 0) {
      ASSERT_EQ(chmod(dir_.c_str(), 0711), 0);
      ASSERT_EQ(chmod(tmpdir_.c_str(), 0711), 0);
    }
  }
  void ExpectNoServerLeft() {
    ExpectTmpdirEmpty();
    // The postmaster leaves with the tool; its backends may take a moment
    // longer to notice.
    EXPECT_TRUE(test_util::WaitUntil([&] { return ProcessesMentioning(tmpdir_).empty(); }))
        << "a server process outlived the tool by " << test_util::kPatience.count() << " s";
  }
  // A child of the tool named `name` whose command line names the tool's
  // directory: the postmaster ("postgres"; not initdb's, nor a backend,
  // which rewrites its command line, nor a `postgres -C` asked for a
  // setting before the start), "pgbouncer", "perf". 0 if none came before
  // the tool exited or test_util::kPatience passed.
  pid_t WaitForProcessNamed(const std::string& name, test_util::SpawnedTool& tool) {
    pid_t found = 0;
    test_util::WaitUntil([&] {
      for (pid_t pid : ProcessesMentioning(tmpdir_)) {
        std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
        std::string command;
        comm >> command;
        std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
        std::stringstream args;
        args << cmdline.rdbuf();
        const bool asks_a_setting = args.str().find(std::string("\0-C\0", 4)) != std::string::npos;
        if (command == name && ParentOf(pid) == tool.pid() && !asks_a_setting) found = pid;
      }
      return found != 0 || tool.Poll().has_value();
    });
    return found;
  }
  // Whether, before the tool exited or test_util::kPatience passed, the
  // postmaster served a connection: a backend, which names its client in its
  // command line ("postgres: postgres postgres [local] idle"). The
  // connect loop is then under way.
  bool WaitForABackend(pid_t postmaster, test_util::SpawnedTool& tool) {
    bool seen = false;
    test_util::WaitUntil(
        [&] {
          for (pid_t pid : ProcessesMentioning("[local]")) seen = seen || ParentOf(pid) == postmaster;
          return seen || tool.Poll().has_value();
        },
        test_util::kPatience, std::chrono::milliseconds(2));
    return seen;
  }
  // Starts the tool, waits for its server (and `also_wait_for`), and with
  // `into_the_loop` for the server's first backend, interrupts the tool
  // (^C): exit 130, and nothing of the server left.
  void ExpectInterruptLeavesNothing(const std::vector<std::string>& argv, const std::string& also_wait_for = "",
                                    bool into_the_loop = true) {
    test_util::SpawnedTool tool(argv, dir_);
    const pid_t postmaster = WaitForProcessNamed("postgres", tool);
    ASSERT_NE(postmaster, 0) << "no server started: " << test_util::ReadFile(dir_ + "/stderr");
    if (!also_wait_for.empty()) {
      ASSERT_NE(WaitForProcessNamed(also_wait_for, tool), 0) << "no " << also_wait_for << " started";
    }
    if (into_the_loop) {
      ASSERT_TRUE(WaitForABackend(postmaster, tool)) << "no connection made: " << test_util::ReadFile(dir_ + "/stderr");
    }
    ASSERT_TRUE(tool.WaitUntilCatching(SIGINT, test_util::kPatience));
    ASSERT_EQ(kill(tool.pid(), SIGINT), 0);
    const std::optional<int> code = tool.WaitFor(test_util::kPatience);
    ASSERT_TRUE(code.has_value());
    EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 130) << *code;
    ExpectNoServerLeft();
    EXPECT_TRUE(SegmentsCreatedBy(postmaster).empty()) << "the server's System V segment was left";
  }
  std::vector<std::string> Small(std::vector<std::string> args) {
    return WithDefaults(std::move(args), {"--connections=20", "--warmup=2", "--rounds=1", "--shared-buffers=128MB"});
  }
};

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TESTS_TOOLS_PG_CLI_FIXTURE_H_
