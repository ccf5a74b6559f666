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

#include <algorithm>
#include <cerrno>
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
  // The postmaster's children that serve a client over its Unix socket
  // (they name it in their command line: "postgres: postgres postgres
  // [local] idle"), oldest first (/proc/PID/stat's starttime).
  static std::vector<pid_t> BackendsOf(pid_t postmaster) {
    std::vector<std::pair<long long, pid_t>> started;
    for (pid_t pid : ProcessesMentioning("[local]")) {
      if (ParentOf(pid) != postmaster) continue;
      std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      std::getline(in, line);
      const size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      // After the comm: state is field 3, starttime field 22.
      std::istringstream rest(line.substr(close + 2));
      std::string field;
      long long start = 0;
      for (int i = 3; i <= 22 && rest >> field; ++i) {
        if (i == 22) start = std::atoll(field.c_str());
      }
      started.emplace_back(start, pid);
    }
    std::sort(started.begin(), started.end());
    std::vector<pid_t> pids;
    for (const auto& [start, pid] : started) pids.push_back(pid);
    return pids;
  }
  // The postmaster's backends once there were `n` at once (the connect loop
  // is under way, or n held connections are open), or what there were when
  // the tool exited or test_util::kPatience passed.
  std::vector<pid_t> WaitForBackends(pid_t postmaster, test_util::SpawnedTool& tool, size_t n = 1) {
    std::vector<pid_t> backends;
    test_util::WaitUntil(
        [&] {
          backends = BackendsOf(postmaster);
          return backends.size() >= n || tool.Poll().has_value();
        },
        test_util::kPatience, std::chrono::milliseconds(2));
    return backends;
  }
  bool WaitForABackend(pid_t postmaster, test_util::SpawnedTool& tool) { return !WaitForBackends(postmaster, tool).empty(); }
  // Waits for a postmaster of the tool (as WaitForProcessNamed finds one,
  // looked for again at each turn: a short-lived postgres of the tool's
  // may be seen first) with `n` backends at once; its backends, oldest
  // first, or none if the tool exited or test_util::kPatience passed.
  std::vector<pid_t> WaitForServerWithBackends(test_util::SpawnedTool& tool, size_t n) {
    std::vector<pid_t> backends;
    test_util::WaitUntil(
        [&] {
          for (pid_t pid : ProcessesMentioning(tmpdir_)) {
            if (ParentOf(pid) != tool.pid()) continue;
            std::vector<pid_t> of = BackendsOf(pid);
            if (of.size() >= n) {
              backends = std::move(of);
              return true;
            }
          }
          return tool.Poll().has_value();
        },
        test_util::kPatience, std::chrono::milliseconds(2));
    return backends;
  }
  // Starts the tool, waits for its server (and `also_wait_for`), and for
  // `backends` of the server's backends at once (0: none), interrupts the
  // tool (^C): exit 130, and nothing of the server left, those backends
  // included.
  void ExpectInterruptLeavesNothing(const std::vector<std::string>& argv, const std::string& also_wait_for = "",
                                    size_t backends = 1) {
    test_util::SpawnedTool tool(argv, dir_);
    const pid_t postmaster = WaitForProcessNamed("postgres", tool);
    ASSERT_NE(postmaster, 0) << "no server started: " << test_util::ReadFile(dir_ + "/stderr");
    if (!also_wait_for.empty()) {
      ASSERT_NE(WaitForProcessNamed(also_wait_for, tool), 0) << "no " << also_wait_for << " started";
    }
    std::vector<pid_t> seen;
    if (backends > 0) {
      seen = WaitForBackends(postmaster, tool, backends);
      ASSERT_GE(seen.size(), backends) << "not so many connections made: " << test_util::ReadFile(dir_ + "/stderr");
    }
    ASSERT_TRUE(tool.WaitUntilCatching(SIGINT, test_util::kPatience));
    ASSERT_EQ(kill(tool.pid(), SIGINT), 0);
    const std::optional<int> code = tool.WaitFor(test_util::kPatience);
    ASSERT_TRUE(code.has_value());
    EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 130) << *code;
    ExpectNoServerLeft();
    EXPECT_TRUE(SegmentsCreatedBy(postmaster).empty()) << "the server's System V segment was left";
    // Backends rewrite their command line: they are looked for by pid.
    EXPECT_TRUE(test_util::WaitUntil([&] {
      return std::all_of(seen.begin(), seen.end(), [](pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; });
    })) << "a backend outlived the run";
  }
  std::vector<std::string> Small(std::vector<std::string> args) {
    return WithDefaults(std::move(args), {"--connections=20", "--warmup=2", "--rounds=1", "--shared-buffers=128MB"});
  }
};

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TESTS_TOOLS_PG_CLI_FIXTURE_H_
