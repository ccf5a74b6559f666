// The tool's private directories (a server's data directory and socket, a
// mock postmaster's socket, perf's work files): where they go, and their
// removal on every path — by the code that made them on the paths it
// controls, and by a watchdog process on the ones it does not (SIGKILL, the
// OOM killer, a CI job's kill).
//
// The watchdog is `awk` (POSIX, in every Debian installation), started with
// posix_spawn in a session of its own, so that a kill of the tool's process
// group does not reach it; it reads registrations from a socket whose one
// writing end is this process's (close-on-exec, and closed in every fork by
// a pthread_atfork handler). When the socket reaches end of file — the tool
// has ended, however — it removes every directory still registered, each
// after the process named with it has ended (a server writes into its
// directory until it exits; at most a minute is waited). While nothing is
// registered no watchdog runs: the last UnwatchDirectory ends and reaps it,
// so an orderly run leaves no process behind.
#ifndef BACKENDLAB_BASE_PRIVATE_DIR_H_
#define BACKENDLAB_BASE_PRIVATE_DIR_H_

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace backendlab {

// $TMPDIR, absolute (a relative one is taken from the working directory, as
// the caller meant it), or /tmp when it is unset or empty.
std::string TempRoot();

// Registers `dir` (absolute; no newline or single quote in it: the
// watchdog's line protocol) for removal should this process end before
// UnwatchDirectory(dir). With `wait_for` > 0 the removal first waits for
// that process to end; registering `dir` again replaces it. Thread-safe.
// Errors: InvalidArgument for a path the protocol cannot carry, Unavailable
// when the watchdog cannot be started (then nothing is registered).
absl::Status WatchDirectory(const std::string& dir, pid_t wait_for = 0);

// Forgets `dir` (removed, or kept on purpose, by its owner); the last one
// forgotten ends the watchdog. A directory never registered is ignored.
void UnwatchDirectory(const std::string& dir);

// While one lives, the watchdog runs even with nothing registered: started
// when it is made, ended with the last hold once nothing is registered. A
// loop that makes and removes a directory per round (a mock postmaster's
// socket, one per configuration and round) then starts the watchdog once,
// before its first round, instead of once per round beside the server it
// measures. A fork's copy holds nothing.
class WatchdogHold {
 public:
  WatchdogHold();
  ~WatchdogHold();
  WatchdogHold(const WatchdogHold&) = delete;
  WatchdogHold& operator=(const WatchdogHold&) = delete;
};

// The watchdog's pid, 0 while none runs (for tests).
pid_t WatchdogPidForTesting();

// A fresh 0700 directory TempRoot()/<prefix>.XXXXXX, watched from the
// start. The caller removes it and then calls UnwatchDirectory. Errors name
// the path: Unavailable when it cannot be made, or the watch's.
absl::StatusOr<std::string> MakePrivateDir(std::string_view prefix);

// A directory MakePrivateDir made, removed with everything in it (never
// through a symbolic link) and forgotten by the watchdog when this goes —
// by the process that made it only: a forked child's copy removes nothing.
class PrivateDir {
 public:
  static absl::StatusOr<PrivateDir> Make(std::string_view prefix);
  PrivateDir() = default;
  PrivateDir(PrivateDir&& other) noexcept
      : path_(std::exchange(other.path_, {})), owner_(std::exchange(other.owner_, 0)) {}
  PrivateDir& operator=(PrivateDir&& other) noexcept;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir() { Remove(); }

  const std::string& path() const { return path_; }
  bool empty() const { return path_.empty(); }
  // Removes it now; idempotent.
  void Remove();

 private:
  PrivateDir(std::string path, pid_t owner) : path_(std::move(path)), owner_(owner) {}
  std::string path_;
  pid_t owner_ = 0;
};

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_PRIVATE_DIR_H_
