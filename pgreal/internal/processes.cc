// Spawning commands as another user, /proc figures and recursive removal.
#include "pgreal/internal/processes.h"

#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "base/processes.h"
#include "base/resource_usage.h"
#include "base/signal_safe.h"

extern char** environ;

namespace backendlab::pgreal::internal {
namespace {

absl::Status ErrnoStatus(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// In the child, between fork and exec: async-signal-safe calls only, and on
// failure a short message to the log and _exit(127).
[[noreturn]] void ChildFail(const char* what) {
  const int err = errno;
  (void)!write(STDERR_FILENO, "backendlab: ", 12);
  (void)!write(STDERR_FILENO, what, std::strlen(what));
  (void)!write(STDERR_FILENO, ": ", 2);
  const char* reason = strerror(err);
  (void)!write(STDERR_FILENO, reason, std::strlen(reason));
  (void)!write(STDERR_FILENO, "\n", 1);
  _exit(127);
}

}  // namespace

absl::StatusOr<User> LookUpUser(const std::string& name) {
  struct passwd pw;
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  const int err = getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`run_as`: no user '", name, "'", err != 0 ? absl::StrCat(" (", std::strerror(err), ")") : "",
        "; PostgreSQL refuses to run as root, so as root the server runs as an unprivileged user "
        "(Debian's postgresql-15 package creates 'postgres')"));
  }
  if (pw.pw_uid == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("`run_as`: '", name, "' is root, and PostgreSQL refuses to run as root"));
  }
  return User{name, pw.pw_uid, pw.pw_gid};
}

absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's environment, made here: after fork it only writes its pid.
  std::vector<std::string> names;
  for (const std::string& entry : options.environment) names.push_back(entry.substr(0, entry.find('=') + 1));
  if (!options.pid_variable.empty()) names.push_back(options.pid_variable + "=");
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    if (std::none_of(names.begin(), names.end(), [&](const std::string& n) { return entry.starts_with(n); })) {
      env.push_back(*e);
    }
  }
  for (const std::string& entry : options.environment) env.push_back(const_cast<char*>(entry.c_str()));
  std::string own_pid = options.pid_variable.empty() ? "" : options.pid_variable + "=" + std::string(kDecimalBytes, '\0');
  if (!own_pid.empty()) env.push_back(own_pid.data());
  env.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return ErrnoStatus(absl::StrCat("fork for ", argv[0]));
  if (pid == 0) {
    setpgid(0, 0);
    // Whatever it creates (PgBouncer's log, say) is its user's alone.
    umask(077);
    // The stop handlers of the tool are not the child's: default dispositions
    // before exec (exec resets handlers, but not ignored signals).
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (options.user) {
      if (initgroups(options.user->name.c_str(), options.user->gid) != 0) ChildFail("initgroups");
      if (setgid(options.user->gid) != 0) ChildFail("setgid");
      if (setuid(options.user->uid) != 0) ChildFail("setuid");
      // The caller's directory may be one that user cannot enter (a 0700
      // directory of root's): postgres -C resolves its own path from
      // there and failed. Every path given to the child is absolute.
      if (chdir("/") != 0) ChildFail("chdir /");
    }
    // The log is opened as the child's user, not as root, and never through
    // a symbolic link: the directory belongs to that user.
    const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    const int log_fd =
        options.log_path.empty()
            ? null_fd
            : open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (null_fd < 0 || log_fd < 0) ChildFail("open the log");
    if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0) {
      ChildFail("dup2");
    }
    if (options.pdeath_signal != 0) {
      if (prctl(PR_SET_PDEATHSIG, options.pdeath_signal) != 0) ChildFail("prctl(PR_SET_PDEATHSIG)");
      if (getppid() != parent) _exit(1);  // the tool died before the line above
    }
    if (!own_pid.empty()) FormatDecimal(getpid(), own_pid.data() + options.pid_variable.size() + 1);
    execve(args[0], args.data(), env.data());
    ChildFail(args[0]);
  }
  setpgid(pid, pid);  // also here, so that the group exists before we may signal it
  return pid;
}

namespace {

// Every process of /proc, as far as its stat can be read, with the fields
// this file looks at: state, parent, process group.
// The processes of process group `pgid` that have not ended (zombies are
// left out: they hold nothing but their entry).
std::vector<pid_t> LiveMembersOfGroup(pid_t pgid) {
  std::vector<pid_t> members;
  for (const ProcessEntry& p : ProcessTable()) {
    if (p.pgrp == pgid && p.state != 'Z') members.push_back(p.pid);
  }
  return members;
}

// Removes the System V segments no process is attached to whose creator
// was one of `creators` (/proc/sysvipc/shm: key shmid perms size cpid lpid
// nattch ...).
void RemoveSegmentsCreatedBy(const std::vector<pid_t>& creators) {
  std::ifstream in("/proc/sysvipc/shm");
  std::string line;
  std::getline(in, line);  // the column names
  while (std::getline(in, line)) {
    long key = 0, shmid = 0, perms = 0, size = 0, cpid = 0, lpid = 0, nattch = 0;
    if (std::sscanf(line.c_str(), "%ld %ld %lo %ld %ld %ld %ld", &key, &shmid, &perms, &size, &cpid, &lpid,
                    &nattch) == 7 &&
        nattch == 0 && std::find(creators.begin(), creators.end(), static_cast<pid_t>(cpid)) != creators.end()) {
      shmctl(static_cast<int>(shmid), IPC_RMID, nullptr);
    }
  }
}

// How long, after a stop request, the rest of a command's group may take to
// leave on its own once the command itself is gone.
constexpr int64_t kGroupLeaveTimeoutNs = 30'000'000'000;

}  // namespace

absl::Status RunToEnd(const std::vector<std::string>& argv, const SpawnOptions& options) {
  absl::StatusOr<pid_t> pid = Spawn(argv, options);
  if (!pid.ok()) return pid.status();
  int status = 0;
  bool stopped = false;
  std::vector<pid_t> members;  // of its group, as seen since the stop
  for (;;) {
    const pid_t r = waitpid(*pid, &status, WNOHANG);
    if (r == *pid) break;
    if (r < 0 && errno != EINTR) return ErrnoStatus(absl::StrCat("waitpid for ", argv[0]));
    if (StopRequested() && !stopped) {
      // The command alone, not its group: what it started is left to end on
      // its own. initdb's bootstrap postgres, for one, reads its commands
      // from initdb through a pipe and, at end of file, exits in order,
      // removing its System V segment; killed, it would leave the segment
      // for good.
      members = LiveMembersOfGroup(*pid);
      kill(*pid, SIGKILL);
      stopped = true;
    }
    usleep(5000);
  }
  if (stopped) {
    const int64_t end = NowNs() + kGroupLeaveTimeoutNs;
    for (std::vector<pid_t> left = LiveMembersOfGroup(*pid); !left.empty(); left = LiveMembersOfGroup(*pid)) {
      for (pid_t p : left) {
        if (std::find(members.begin(), members.end(), p) == members.end()) members.push_back(p);
      }
      if (NowNs() > end) {
        // Stuck: killed after all, and whatever shared memory they made
        // removed by hand.
        kill(-*pid, SIGKILL);
        for (int i = 0; i < 100 && !LiveMembersOfGroup(*pid).empty(); ++i) usleep(10'000);
        RemoveSegmentsCreatedBy(members);
        break;
      }
      usleep(10'000);
    }
    return StoppedStatus();
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(argv[0], " failed (", DescribeWaitStatus(status), ")"));
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("wait status ", status);
}

std::optional<ProcessTotals> ReadProcessTotals(pid_t pid) {
  const std::optional<ProcStat> s = ReadProcStat(pid);
  if (!s) return std::nullopt;
  const int64_t ns_per_tick = 1'000'000'000LL / sysconf(_SC_CLK_TCK);
  ProcessTotals t;
  t.minor_faults = s->minor_faults + s->children_minor_faults;
  t.major_faults = s->major_faults + s->children_major_faults;
  t.user_ns = (s->user_ticks + s->children_user_ticks) * ns_per_tick;
  t.system_ns = (s->system_ticks + s->children_system_ticks) * ns_per_tick;
  t.cpu_ns = t.user_ns + t.system_ns;
  // The process's own CPU in nanoseconds (the scheduler's sum_exec_runtime,
  // /proc/PID/schedstat's first field): a postmaster's share of a
  // connection is a few hundred microseconds, below a clock tick.
  std::ifstream schedstat(absl::StrCat("/proc/", pid, "/schedstat"));
  long long own = 0;
  if (schedstat >> own && own >= 0) t.own_cpu_ns = own;
  return t;
}

std::string FileTail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    // The tool's own pings while a server starts, refused until it is ready:
    // a line each, and never the reason it did not start.
    if (line.find("the database system is starting up") != std::string::npos) continue;
    last.push_back(std::move(line));
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  if (last.empty()) return "\n  | (nothing: the log is empty)";
  std::string tail;
  for (const std::string& line : last) absl::StrAppend(&tail, "\n  | ", line);
  return tail;
}

absl::Status RemoveTree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return errno == ENOENT ? absl::OkStatus() : ErrnoStatus("stat " + path);
  const int r = nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, FTW*) { return remove(p) == 0 || errno == ENOENT ? 0 : -1; }, 16,
      FTW_DEPTH | FTW_PHYS);
  return r == 0 ? absl::OkStatus() : ErrnoStatus("cannot remove " + path);
}

bool WaitForExit(pid_t pid, int64_t timeout_ns, int* status) {
  const int64_t end = NowNs() + timeout_ns;
  for (;;) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (NowNs() > end) return false;
    usleep(10'000);
  }
}

bool ReapedWithin(pid_t pid, int64_t grace_ns, int* status) {
  const int64_t end = NowNs() + grace_ns;
  pid_t r;
  while ((r = waitpid(pid, status, WNOHANG)) == 0 && NowNs() < end) usleep(10'000);
  return r == pid;
}

std::string ConninfoValue(const std::string& value) {
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

absl::Status WriteNewFile(const std::string& path, const std::string& text, const std::optional<User>& owner) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(absl::StrCat("create ", path));
  bool ok = true;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  if (ok && owner && fchown(fd, owner->uid, owner->gid) != 0) ok = false;
  const int saved = errno;
  close(fd);
  errno = saved;
  if (!ok) return ErrnoStatus(absl::StrCat("write ", path));
  return absl::OkStatus();
}

}  // namespace backendlab::pgreal::internal
