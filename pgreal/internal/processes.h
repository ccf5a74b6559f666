// Child processes of the real-server experiment: a command run as another user
// in its own process group, /proc figures of a process and its children, and
// recursive removal. Not for other modules.
#ifndef BACKENDLAB_PGREAL_INTERNAL_PROCESSES_H_
#define BACKENDLAB_PGREAL_INTERNAL_PROCESSES_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace backendlab::pgreal::internal {

// The unprivileged user a server runs as when the tool is root.
struct User {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Looks the user up; InvalidArgument naming it when there is none.
absl::StatusOr<User> LookUpUser(const std::string& name);

// How a spawned child starts: as `user` (when set: groups, gid, then uid),
// in a process group of its own so that ^C on the terminal reaches only the
// tool, which stops it in order; umask 077; stdout and stderr to `log_path`
// (appended) or /dev/null; stdin /dev/null; `pdeath_signal` sent to it when the tool
// dies, set after the change of user (which clears it).
struct SpawnOptions {
  std::optional<User> user;
  std::string log_path;
  int pdeath_signal = 0;
  // Added to the tool's environment for the child (NAME=VALUE, replacing a
  // variable of that name).
  std::vector<std::string> environment;
  // If set, the child also gets NAME=<its own pid>, written by the child
  // between fork and exec: how the sampler library knows the one process it
  // is meant for.
  std::string pid_variable;
};

// fork + exec of argv[0] (a path) with argv; the pid, or an error naming the
// command.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options);

// Spawn and wait for the command to end: OK on exit 0, Internal naming the
// command and its exit status otherwise. On a stop request (base/interrupt.h)
// the command is killed and reaped, what it started in its process group is
// waited for (up to 30 s; they see their parent gone and end in order), and
// the result is Cancelled. Should they not end, they are killed and the
// System V segments they made and left removed.
absl::Status RunToEnd(const std::vector<std::string>& argv, const SpawnOptions& options);

// Waits up to `timeout_ns` for the child `pid` to end; true and *status
// once it has (or when there is no such child to wait for).
bool WaitForExit(pid_t pid, int64_t timeout_ns, int* status);

// True and *status if the child `pid` has ended and is reaped now or
// within `grace_ns` (0: now only); false while it runs (or is no child).
bool ReapedWithin(pid_t pid, int64_t grace_ns, int* status);

// A conninfo value in single quotes, as libpq reads them.
std::string ConninfoValue(const std::string& value);

// "exit status 3", "killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int status);

// What the kernel accounts to a process in /proc/<pid>/stat: its own CPU and
// faults, and those of the children it has reaped (cutime, cstime, cminflt,
// cmajflt) — for a postmaster, every backend that has exited.
struct ProcessTotals {
  int64_t cpu_ns = 0;           // utime + stime + cutime + cstime (clock-tick resolution)
  int64_t user_ns = 0;          // utime + cutime
  int64_t system_ns = 0;        // stime + cstime
  int64_t minor_faults = 0;     // minflt + cminflt
  int64_t major_faults = 0;     // majflt + cmajflt
  // The process alone (its main thread: a postmaster has one), in ns, from
  // /proc/PID/schedstat; -1 where the kernel does not give it.
  int64_t own_cpu_ns = -1;
};
std::optional<ProcessTotals> ReadProcessTotals(pid_t pid);

// The last `lines` lines of a text file, each line prefixed with "\n  | "
// so that a log tail reads apart from our own message, a server's "the
// database system is starting up" (the tool's pings) left out; a line
// saying so when there is nothing (or the file cannot be read).
std::string FileTail(const std::string& path, int lines);

// Creates `path` (0600; an error if it exists, or is a symbolic link) with
// `text`, owned by `owner` when given: safe as root in a directory another
// user owns.
absl::Status WriteNewFile(const std::string& path, const std::string& text, const std::optional<User>& owner);

// rm -rf: removes `path` and everything under it, not following symbolic
// links. OK if it does not exist.
absl::Status RemoveTree(const std::string& path);

}  // namespace backendlab::pgreal::internal

#endif  // BACKENDLAB_PGREAL_INTERNAL_PROCESSES_H_
