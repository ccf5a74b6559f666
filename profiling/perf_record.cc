// perf record over a workload, perf script folded; the processes it starts
// are stopped and reaped on every path, and die with their parent.
#include "profiling/perf_record.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/interrupt.h"
#include "profiling/perf_events.h"
#include "profiling/perf_script.h"

extern char** environ;

namespace backendlab::profiling {
namespace {

// How long perf may take to stop its workload (which drains its own
// children) after being told to, before it is killed; the workload then
// stops through its own PR_SET_PDEATHSIG.
constexpr auto kStopGrace = std::chrono::seconds(10);
// How often the wait for a child looks at the stop request: a signal that
// arrives between a look and the next wait is seen this late, at worst.
constexpr int kPollMs = 20;

absl::StatusOr<std::string> FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate = absl::StrCat(std::string(dir), "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(program, " not found in PATH"));
}

// `pid` in decimal into `out` (at least 21 bytes), NUL-terminated: for a
// forked child, where only async-signal-safe code may run.
void FormatPid(pid_t pid, char* out) {
  char digits[21];
  int n = 0;
  auto value = static_cast<unsigned long>(pid);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\0';
}

// Runs argv with stdout into `stdout_path`, or captured into *captured when
// the path is empty; stderr passes through. The child dies with this
// process (PR_SET_PDEATHSIG: SIGKILL) and finds its own pid in kDieWithParentEnv, for
// a child of its own to die with it. The exit status (128 + signal when
// killed by one); Cancelled when a stop was requested meanwhile: the child
// was told to stop with SIGTERM and reaped.
absl::StatusOr<int> RunChild(const std::vector<std::string>& argv, const std::string& stdout_path,
                             std::string* captured) {
  // Everything the child needs is prepared here: after fork it only fills
  // in its pid and execs.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string prefix = absl::StrCat(kDieWithParentEnv, "=");
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with(prefix)) env.push_back(*e);
  }
  std::string die_with = prefix + std::string(21, '\0');
  env.push_back(die_with.data());
  env.push_back(nullptr);
  int pipe_fds[2] = {-1, -1};
  if (stdout_path.empty() && pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::UnavailableError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t parent = getpid();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // Killed outright: once the caller is gone nobody reads perf's data,
    // and the workload stops through its own PR_SET_PDEATHSIG.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // a blocked signal would stay blocked across exec
    signal(SIGPIPE, SIG_DFL);  // an ignored signal would stay ignored across exec (the tool ignores SIGPIPE)
    FormatPid(getpid(), die_with.data() + prefix.size());
    const int fd = stdout_path.empty() ? pipe_fds[1] : open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(127);
    execve(args[0], args.data(), env.data());
    const char* why = std::strerror(errno);
    (void)!write(STDERR_FILENO, "cannot run ", 11);
    (void)!write(STDERR_FILENO, args[0], std::strlen(args[0]));
    (void)!write(STDERR_FILENO, ": ", 2);
    (void)!write(STDERR_FILENO, why, std::strlen(why));
    (void)!write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  if (pipe_fds[1] >= 0) close(pipe_fds[1]);
  if (pid < 0) {
    const int fork_errno = errno;
    if (pipe_fds[0] >= 0) close(pipe_fds[0]);
    return absl::UnavailableError(absl::StrCat("fork: ", std::strerror(fork_errno)));
  }
  int out_fd = pipe_fds[0];
  bool told_to_stop = false;
  std::chrono::steady_clock::time_point kill_at = std::chrono::steady_clock::time_point::max();
  int status = 0;
  for (;;) {
    if (out_fd >= 0) {
      pollfd p = {out_fd, POLLIN, 0};
      if (poll(&p, 1, kPollMs) > 0) {
        std::array<char, 65536> buf;
        const ssize_t n = read(out_fd, buf.data(), buf.size());
        if (n > 0) captured->append(buf.data(), static_cast<size_t>(n));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
          close(out_fd);
          out_fd = -1;
        }
      }
    } else {
      poll(nullptr, 0, kPollMs);
    }
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      const int wait_errno = errno;
      if (out_fd >= 0) close(out_fd);
      return absl::UnavailableError(absl::StrCat("waitpid: ", std::strerror(wait_errno)));
    }
    if (StopRequested() && !told_to_stop) {
      kill(pid, SIGTERM);
      told_to_stop = true;
      kill_at = std::chrono::steady_clock::now() + kStopGrace;
    } else if (std::chrono::steady_clock::now() > kill_at) {
      kill(pid, SIGKILL);
      kill_at = std::chrono::steady_clock::time_point::max();
    }
  }
  if (out_fd >= 0) {  // what the child wrote just before it ended
    std::array<char, 65536> buf;
    ssize_t n;
    while ((n = read(out_fd, buf.data(), buf.size())) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      captured->append(buf.data(), static_cast<size_t>(n));
    }
    close(out_fd);
  }
  if (StopRequested()) {
    return absl::CancelledError(absl::StrCat("interrupted: ", argv.size() > 1 ? argv[0] + " " + argv[1] : argv[0],
                                             " stopped, every process reaped"));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

void DieWithParentIfAsked() {
  const char* value = std::getenv(kDieWithParentEnv);
  if (value == nullptr) return;
  const long parent = std::strtol(value, nullptr, 10);
  unsetenv(kDieWithParentEnv);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(StopExitCode(SIGTERM));  // it died before prctl took effect
}

absl::StatusOr<FoldedStacks> RecordUnderPerf(const PerfRecordOptions& options,
                                             const std::function<void(const std::vector<std::string>&)>& on_start) {
  absl::StatusOr<std::string> perf = FindInPath("perf");
  if (!perf.ok()) return absl::FailedPreconditionError("perf is not installed (Debian: apt-get install linux-perf)");
  std::vector<std::string> argv = {*perf, "record", "-q", "-e", "cpu-clock", "-F", absl::StrCat(options.frequency_hz),
                                   "--call-graph=fp", "-o", options.data_path, "--"};
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  if (on_start) on_start(argv);
  absl::StatusOr<int> recorded = RunChild(argv, options.output_path, nullptr);
  if (!recorded.ok()) return recorded.status();
  if (*recorded != 0) {
    const std::optional<int> level = PerfEventParanoid();
    return absl::UnavailableError(absl::StrCat(
        "perf record failed (exit ", *recorded, "; its message is above). If the kernel refused: as root, or with "
        "sysctl kernel.perf_event_paranoid=1 (now ", level ? absl::StrCat(*level) : std::string("unknown"),
        "); the workload's own output is in ", options.output_path));
  }
  std::string script;
  absl::StatusOr<int> scripted =
      RunChild({*perf, "script", "-i", options.data_path, "-F", "comm,pid,tid,time,event,ip,sym,dso"}, "", &script);
  if (!scripted.ok()) return scripted.status();
  if (*scripted != 0) return absl::UnavailableError(absl::StrCat("perf script failed (exit ", *scripted, ")"));
  PerfScriptOptions fold;
  fold.drop_kernel_frames = true;
  fold.short_names = true;
  return ParsePerfScript(script, fold);
}

}  // namespace backendlab::profiling
