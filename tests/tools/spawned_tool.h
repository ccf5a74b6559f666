// A backendlab run started in the background, for tests that signal it while
// it runs: its output goes to files in a directory, and it is killed and
// reaped if the test leaves before it has exited.
#ifndef BACKENDLAB_TESTS_TOOLS_SPAWNED_TOOL_H_
#define BACKENDLAB_TESTS_TOOLS_SPAWNED_TOOL_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace backendlab::test_util {

class SpawnedTool {
 public:
  // stdout and stderr go to dir/stdout and dir/stderr. With own_group the
  // tool leads a process group of its own, so that a signal can be sent to
  // it and its children at once, as a terminal's ^C is.
  SpawnedTool(std::vector<std::string> args, const std::string& dir, bool own_group = false) {
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, (dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, (dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    if (own_group) {
      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
      posix_spawnattr_setpgroup(&attr, 0);
    }
    if (posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
  }
  SpawnedTool(const SpawnedTool&) = delete;
  SpawnedTool& operator=(const SpawnedTool&) = delete;
  ~SpawnedTool() {
    if (pid_ > 0 && !status_) {
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
    }
  }
  pid_t pid() const { return pid_; }

  // Its wait status once it has exited; nullopt while it runs.
  std::optional<int> Poll() {
    if (status_ || pid_ <= 0) return status_;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_;
  }

  // Its wait status once it has exited, or nullopt after `limit`.
  std::optional<int> WaitFor(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!Poll() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TOOLS_SPAWNED_TOOL_H_
