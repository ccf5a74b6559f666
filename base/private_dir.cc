// Private directories and the watchdog that removes them after a kill.
#include "base/private_dir.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace backendlab {
namespace {

// The watchdog: registrations on stdin, one a line, "+ PID DIR" (remove DIR
// once process PID, unless 0, has ended; a zombie has) and "- DIR" (forget
// it); at end of file, the removals. The wait is capped at a minute (1200 ×
// 50 ms) and the removal retried, in case the last writer was still at work.
constexpr char kWatchdogProgram[] = R"AWK(
substr($0, 1, 2) == "+ " { rest = substr($0, 3); at = index(rest, " "); want[substr(rest, at + 1)] = substr(rest, 1, at - 1); next }
substr($0, 1, 2) == "- " { delete want[substr($0, 3)]; next }
END {
  for (dir in want) {
    system("p=" want[dir] "; n=0; while [ \"$p\" -gt 0 ] && [ -e /proc/$p ] && ! grep -q \"^State:.Z\" /proc/$p/status 2>/dev/null && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done; for t in 1 2 3 4 5; do rm -rf -- '" dir "'; [ -e '" dir "' ] || break; sleep 0.2; done")
  }
}
)AWK";
constexpr char kAwk[] = "/usr/bin/awk";

struct Watch {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pid_t owner = 0;  // the process whose registrations `dirs` are (a fork starts with none)
  int fd = -1;      // the writing end, -1 while no watchdog runs
  pid_t pid = 0;
  std::map<std::string, pid_t> dirs;
  int holds = 0;  // WatchdogHolds alive in `owner`
};

// A fork starts with no registrations and no holds of its own.
void OwnLocked(Watch& w) {
  if (w.owner == getpid()) return;
  w.dirs.clear();
  w.holds = 0;
  w.owner = getpid();
}

// Never destroyed: a directory may be forgotten from a static destructor.
Watch& State() {
  static Watch* const watch = [] {
    Watch* w = new Watch;
    // A fork holds the lock only across fork(); the child closes its copy of
    // the writing end (async-signal-safe: close only), so that the watchdog
    // sees end of file when the tool ends, not when its last child does.
    pthread_atfork([] { pthread_mutex_lock(&State().mu); }, [] { pthread_mutex_unlock(&State().mu); },
                   [] {
                     Watch& s = State();
                     if (s.fd >= 0) close(s.fd);
                     s.fd = -1;
                     s.pid = 0;
                     pthread_mutex_unlock(&s.mu);
                   });
    return w;
  }();
  return *watch;
}

class Locked {
 public:
  explicit Locked(Watch& w) : w_(w) { pthread_mutex_lock(&w_.mu); }
  ~Locked() { pthread_mutex_unlock(&w_.mu); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  Watch& w_;
};

bool SendAll(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string Line(const std::string& dir, pid_t pid) { return absl::StrCat("+ ", pid, " ", dir, "\n"); }

// Ends the watchdog: end of file, then reaped. With nothing registered it
// removes nothing.
void StopLocked(Watch& w) {
  if (w.fd >= 0) close(w.fd);
  w.fd = -1;
  if (w.pid > 0) {
    while (waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  w.pid = 0;
}

absl::Status StartLocked(Watch& w) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    return absl::UnavailableError(absl::StrCat("the clean-up watchdog: socketpair: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A session of its own: a signal to the tool's process group (a
  // terminal's ^C, a job control kill) does not reach it. Default
  // dispositions and no blocked signal, whatever the tool had.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char* argv[] = {const_cast<char*>("awk"), const_cast<char*>(kWatchdogProgram), nullptr};
  pid_t pid = 0;
  const int err = posix_spawn(&pid, kAwk, &actions, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(ends[1]);
  if (err != 0) {
    close(ends[0]);
    return absl::UnavailableError(absl::StrCat("the clean-up watchdog: cannot run ", kAwk, ": ", std::strerror(err)));
  }
  w.fd = ends[0];
  w.pid = pid;
  return absl::OkStatus();
}

// A new watchdog (the last one reaped, if any), told every registration.
absl::Status RestartLocked(Watch& w) {
  StopLocked(w);
  if (absl::Status s = StartLocked(w); !s.ok()) return s;
  std::string all;
  for (const auto& [dir, pid] : w.dirs) all += Line(dir, pid);
  if (!SendAll(w.fd, all)) {
    StopLocked(w);
    return absl::UnavailableError("the clean-up watchdog ended as soon as it started");
  }
  return absl::OkStatus();
}

}  // namespace

std::string TempRoot() {
  const char* tmp = getenv("TMPDIR");
  if (tmp == nullptr || *tmp == '\0') return "/tmp";
  std::string root = tmp;
  if (root[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) != nullptr) root = absl::StrCat(cwd, "/", root);
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root;
}

absl::Status WatchDirectory(const std::string& dir, pid_t wait_for) {
  if (dir.empty() || dir[0] != '/' || dir.find_first_of("\n'") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the directory ", dir, " is not an absolute path free of newlines and single quotes, which the tool's clean-up "
        "after a kill cannot carry; set TMPDIR to another directory"));
  }
  Watch& w = State();
  Locked lock(w);
  OwnLocked(w);  // a fork's copy of its parent's registrations is not its own
  const pid_t pid = wait_for > 0 ? wait_for : 0;
  const bool had = w.dirs.contains(dir);
  const pid_t old = had ? w.dirs[dir] : 0;
  w.dirs[dir] = pid;
  // Sent to the running watchdog; one that died meanwhile is replaced.
  absl::Status s = w.fd >= 0 && SendAll(w.fd, Line(dir, pid)) ? absl::OkStatus() : RestartLocked(w);
  if (!s.ok()) {
    if (had) {
      w.dirs[dir] = old;
    } else {
      w.dirs.erase(dir);
    }
    return s;
  }
  return absl::OkStatus();
}

void UnwatchDirectory(const std::string& dir) {
  Watch& w = State();
  Locked lock(w);
  if (w.owner != getpid() || w.dirs.erase(dir) == 0) return;
  // Forgotten first, then (the last one) the end of file: a watchdog that
  // saw the end alone would remove it.
  if (w.fd >= 0 && !SendAll(w.fd, absl::StrCat("- ", dir, "\n")) && !w.dirs.empty()) {
    RestartLocked(w).IgnoreError();  // a new watchdog, told what is still registered
  }
  if (w.dirs.empty() && w.holds == 0) StopLocked(w);
}

WatchdogHold::WatchdogHold() {
  Watch& w = State();
  Locked lock(w);
  OwnLocked(w);
  ++w.holds;
  // Not started (no awk?): the first registration says why, as without a hold.
  if (w.fd < 0) StartLocked(w).IgnoreError();
}

WatchdogHold::~WatchdogHold() {
  Watch& w = State();
  Locked lock(w);
  if (w.owner != getpid()) return;  // a fork's copy
  if (--w.holds == 0 && w.dirs.empty()) StopLocked(w);
}

pid_t WatchdogPidForTesting() {
  Watch& w = State();
  Locked lock(w);
  return w.owner == getpid() ? w.pid : 0;
}

absl::StatusOr<std::string> MakePrivateDir(std::string_view prefix) {
  std::string dir = absl::StrCat(TempRoot(), "/", std::string(prefix), ".XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot create a directory ", dir, ": ", std::strerror(errno)));
  }
  if (absl::Status s = WatchDirectory(dir); !s.ok()) {
    rmdir(dir.c_str());
    return s;
  }
  return dir;
}

absl::StatusOr<PrivateDir> PrivateDir::Make(std::string_view prefix) {
  absl::StatusOr<std::string> dir = MakePrivateDir(prefix);
  if (!dir.ok()) return dir.status();
  return PrivateDir(std::move(*dir), getpid());
}

PrivateDir& PrivateDir::operator=(PrivateDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, {});
    owner_ = std::exchange(other.owner_, 0);
  }
  return *this;
}

void PrivateDir::Remove() {
  if (path_.empty()) return;
  if (owner_ == getpid()) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    UnwatchDirectory(path_);
  }
  path_.clear();
}

}  // namespace backendlab
