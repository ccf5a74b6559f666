// Runs a program (the backendlab CLI) as a child for a test: stdin from
// /dev/null, stdout and stderr into files, reaped before returning.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_RUN_PROGRAM_H_
#define BACKENDLAB_TESTS_TEST_UTIL_RUN_PROGRAM_H_

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern char** environ;

namespace backendlab::test_util {

struct RunResult {
  int exit_code = -1;  // 128 + signal if killed by one
  std::string out;
  std::string err;
};

// The lines of `text`, without their newlines.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Where a spawned program's standard output goes.
enum class Stdout {
  kFile,     // dir/stdout, read back into RunResult::out
  kDevFull,  // /dev/full: every write fails with ENOSPC
  kClosed,   // descriptor 1 closed
  kBrokenPipe,  // a pipe whose reader is gone (`| head -0`): every write fails with EPIPE
};

// Starts argv[0] with `argv` and returns its pid (-1 and a test failure if it
// cannot): stdin from /dev/null, stdout as `out` says, stderr to dir/stderr.
// Files, not pipes: no pipe can fill up and stall the child. With own_group
// it leads a process group of its own, so that a signal can reach it and its
// children at once, as a terminal's ^C does a shell job.
inline pid_t SpawnProgram(std::vector<std::string> argv_strings, const std::string& dir, Stdout out = Stdout::kFile,
                          bool own_group = false) {
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  int broken_pipe[2] = {-1, -1};
  if (out == Stdout::kClosed) {
    posix_spawn_file_actions_addclose(&actions, 1);
  } else if (out == Stdout::kBrokenPipe) {
    EXPECT_EQ(pipe2(broken_pipe, O_CLOEXEC), 0);
    close(broken_pipe[0]);  // before the child starts: its first write already finds no reader
    posix_spawn_file_actions_adddup2(&actions, broken_pipe[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, out == Stdout::kFile ? out_path.c_str() : "/dev/full",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
  }
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (own_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  pid_t pid;
  const int spawn_error = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (broken_pipe[1] >= 0) close(broken_pipe[1]);
  EXPECT_EQ(spawn_error, 0) << "cannot run " << argv_strings[0];
  return spawn_error == 0 ? pid : -1;
}

// Runs argv[0] with `argv` (see SpawnProgram) and waits for it; its stdout
// and stderr are read back and their files removed.
inline RunResult RunProgram(std::vector<std::string> argv_strings, const std::string& dir, Stdout out = Stdout::kFile) {
  RunResult result;
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  const pid_t pid = SpawnProgram(std::move(argv_strings), dir, out);
  if (pid < 0) return result;

  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      ADD_FAILURE() << "waitpid failed";
      return result;
    }
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return result;
}

// What the CLI prints for an error: exactly one line, starting with `prefix`.
inline ::testing::AssertionResult IsOneLineStartingWith(const std::string& text, const std::string& prefix) {
  if (text.rfind(prefix, 0) != 0) {
    return ::testing::AssertionFailure() << "does not start with '" << prefix << "': " << text;
  }
  if (text.empty() || text.back() != '\n' || std::count(text.begin(), text.end(), '\n') != 1) {
    return ::testing::AssertionFailure() << "not exactly one line: '" << text << "'";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_RUN_PROGRAM_H_
