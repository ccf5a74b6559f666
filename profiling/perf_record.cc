// perf record over a workload, perf script folded; the processes it starts
// are stopped and reaped on every path, and die with their parent.
#include "profiling/perf_record.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/interrupt.h"
#include "base/signal_safe.h"
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
// How long perf may take to acknowledge a control command: on "enable" it
// has first to synthesize every existing task from /proc.
constexpr auto kAckTimeout = std::chrono::seconds(60);

absl::StatusOr<std::string> FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate = absl::StrCat(std::string(dir), "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(program, " not found in PATH"));
}

// A child started by SpawnChild: its pid, and the read end of its stdout
// when that is captured (-1 otherwise).
struct Child {
  pid_t pid = -1;
  int out_fd = -1;
};

// Starts argv with stdout into `stdout_path`, or into a pipe for AwaitChild
// to capture when `capture` is set; stderr passes through. The child dies
// with this process (PR_SET_PDEATHSIG: SIGKILL) and finds its own pid in
// kDieWithParentEnv, for a child of its own to die with it.
absl::StatusOr<Child> SpawnChild(const std::vector<std::string>& argv, const std::string& stdout_path, bool capture) {
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
  std::string die_with = prefix + std::string(kDecimalBytes, '\0');
  env.push_back(die_with.data());
  env.push_back(nullptr);
  int pipe_fds[2] = {-1, -1};
  if (capture && pipe2(pipe_fds, O_CLOEXEC) != 0) {
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
    FormatDecimal(getpid(), die_with.data() + prefix.size());
    const int fd = capture ? pipe_fds[1] : open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
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
  return Child{pid, pipe_fds[0]};
}

// Waits for `child`, appending what it writes to *captured (when its stdout
// is captured), and reaps it. A stop request meanwhile (base/interrupt.h)
// tells it to stop with SIGTERM, and a child told to stop (here, or by the
// caller before: `told_to_stop`) is SIGKILLed after kStopGrace. The exit
// status (128 + signal when killed by one); Cancelled when a stop was
// requested, `what` naming the child.
absl::StatusOr<int> AwaitChild(Child child, const std::string& what, std::string* captured, bool told_to_stop) {
  const pid_t pid = child.pid;
  int out_fd = child.out_fd;
  std::chrono::steady_clock::time_point kill_at =
      told_to_stop ? std::chrono::steady_clock::now() + kStopGrace : std::chrono::steady_clock::time_point::max();
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
  if (StopRequested()) return absl::CancelledError(absl::StrCat("interrupted: ", what, " stopped, every process reaped"));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs argv to its end: SpawnChild, then AwaitChild.
absl::StatusOr<int> RunChild(const std::vector<std::string>& argv, const std::string& stdout_path,
                             std::string* captured) {
  absl::StatusOr<Child> child = SpawnChild(argv, stdout_path, stdout_path.empty());
  if (!child.ok()) return child.status();
  return AwaitChild(*child, argv.size() > 1 ? argv[0] + " " + argv[1] : argv[0], captured, /*told_to_stop=*/false);
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

namespace {

// How perf ended, for a message: killed by a signal (its message then is
// not above: it had no time to write one), or its exit status.
std::string PerfEnd(int code) {
  if (code > 128 && code < 128 + NSIG) {
    return absl::StrCat("killed by signal ", code - 128, " (", strsignal(code - 128), ")");
  }
  return absl::StrCat("exit ", code, "; its message is above");
}

std::string ParanoidText() {
  const std::optional<int> level = PerfEventParanoid();
  return level ? absl::StrCat(*level) : std::string("unknown");
}

// Writes `command` to perf's control fifo and waits for its "ack". perf
// ending meanwhile is Unavailable with its exit status (*ended set, perf
// reaped); a stop request is Cancelled (perf not yet told).
absl::Status ControlPerf(pid_t perf, int ctl_fd, int ack_fd, const std::string& command, bool* ended) {
  const std::string line = absl::StrCat(command, "\n");
  if (write(ctl_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return absl::UnavailableError(absl::StrCat("writing perf's control fifo: ", std::strerror(errno)));
  }
  const auto give_up = std::chrono::steady_clock::now() + kAckTimeout;
  std::string reply;
  while (reply.find('\n') == std::string::npos) {
    if (StopRequested()) return absl::CancelledError("interrupted: perf record stopped, every process reaped");
    int status = 0;
    if (waitpid(perf, &status, WNOHANG) == perf) {
      *ended = true;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (command != "enable") {
        return absl::UnavailableError(
            absl::StrCat("perf record -a ended while recording (", PerfEnd(code), ")"));
      }
      return absl::UnavailableError(absl::StrCat(
          "perf record -a ended before it recorded (", PerfEnd(code),
          "). Recording every CPU needs root, CAP_PERFMON or "
          "sysctl kernel.perf_event_paranoid=0 (now ",
          ParanoidText(), ")"));
    }
    if (std::chrono::steady_clock::now() > give_up) {
      return absl::UnavailableError(absl::StrCat("perf record did not acknowledge \"", command, "\" within ",
                                                 kAckTimeout.count(), " s"));
    }
    pollfd p = {ack_fd, POLLIN, 0};
    if (poll(&p, 1, kPollMs) > 0) {
      char buf[64];
      const ssize_t n = read(ack_fd, buf, sizeof buf);
      if (n > 0) reply.append(buf, static_cast<size_t>(n));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SystemWideRecordingAvailable() {
  if (!FindInPath("perf").ok()) return absl::FailedPreconditionError("perf is not installed (Debian: apt-get install linux-perf)");
  if (geteuid() == 0) return absl::OkStatus();
  const std::optional<int> level = PerfEventParanoid();
  if (level && *level <= 0) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "recording every CPU (perf record -a) needs root or sysctl kernel.perf_event_paranoid=0 (now ", ParanoidText(), ")"));
}

absl::StatusOr<SystemWideRecording> RecordSystemWide(const SystemWideRecordOptions& options,
                                                     const std::function<absl::Status()>& workload) {
  absl::StatusOr<std::string> perf = FindInPath("perf");
  if (!perf.ok()) return absl::FailedPreconditionError("perf is not installed (Debian: apt-get install linux-perf)");
  SystemWideRecording recording;
  recording.data_path = absl::StrCat(options.work_dir, "/perf.data");
  const std::string ctl_path = absl::StrCat(options.work_dir, "/perf-ctl.fifo");
  const std::string ack_path = absl::StrCat(options.work_dir, "/perf-ack.fifo");
  for (const std::string& fifo : {ctl_path, ack_path}) {
    if (mkfifo(fifo.c_str(), 0600) != 0) {
      const int mkfifo_errno = errno;
      unlink(ctl_path.c_str());
      return absl::UnavailableError(absl::StrCat("mkfifo ", fifo, ": ", std::strerror(mkfifo_errno)));
    }
  }
  // Opened read-write on this side so that neither open blocks on perf,
  // which may fail before it opens its ends.
  const int ctl_fd = open(ctl_path.c_str(), O_RDWR | O_CLOEXEC);
  const int ack_fd = open(ack_path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  // Closed and unlinked: a work_dir may serve another recording.
  auto close_fifos = [&] {
    if (ctl_fd >= 0) close(ctl_fd);
    if (ack_fd >= 0) close(ack_fd);
    unlink(ctl_path.c_str());
    unlink(ack_path.c_str());
  };
  if (ctl_fd < 0 || ack_fd < 0) {
    close_fifos();
    return absl::UnavailableError(absl::StrCat("opening perf's control fifos: ", std::strerror(errno)));
  }
  // -B: no build-id collection at the end, which reads the whole perf.data
  // back (DWARF stacks make it large); perf script finds the binaries by path.
  recording.record_command = {*perf, "record", "-q", "-B", "-a", "-e", "cpu-clock", "-F", absl::StrCat(options.frequency_hz),
                              absl::StrCat("--call-graph=", options.call_graph), "-D", "-1",
                              absl::StrCat("--control=fifo:", ctl_path, ",", ack_path), "-o", recording.data_path};
  absl::StatusOr<Child> child =
      SpawnChild(recording.record_command, absl::StrCat(options.work_dir, "/perf-record.out"), false);
  if (!child.ok()) {
    close_fifos();
    return child.status();
  }
  bool ended = false;
  absl::Status run = ControlPerf(child->pid, ctl_fd, ack_fd, "enable", &ended);
  const auto started = std::chrono::steady_clock::now();
  if (run.ok()) {
    run = workload();
    bool disabled_ended = false;
    absl::Status disabled = ControlPerf(child->pid, ctl_fd, ack_fd, "disable", &disabled_ended);
    ended = ended || disabled_ended;
    if (run.ok()) run = disabled;
  }
  recording.recorded_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  close_fifos();
  if (ended) return run;  // perf already reaped
  // SIGINT is how perf record is asked to finish writing its data; it then
  // re-raises it, so it ends "killed by SIGINT". However long the writing
  // takes, it is not cut short unless the run was stopped (the run's own
  // stop, or one requested meanwhile, gives it kStopGrace).
  kill(child->pid, SIGINT);
  absl::StatusOr<int> recorded =
      AwaitChild(*child, "perf record", nullptr, /*told_to_stop=*/absl::IsCancelled(run) || StopRequested());
  if (!run.ok()) return run;
  if (!recorded.ok()) return recorded.status();
  if (*recorded != 0 && *recorded != 128 + SIGINT) {
    return absl::UnavailableError(absl::StrCat("perf record failed (", PerfEnd(*recorded), ")"));
  }
  absl::StatusOr<int> scripted =
      RunChild({*perf, "script", "-i", recording.data_path, "--no-inline", "--show-task-events", "--show-lost-events", "-F",
                "comm,pid,tid,time,event,ip,sym,dso"},
               "", &recording.script);
  if (!scripted.ok()) return scripted.status();
  if (*scripted != 0) return absl::UnavailableError(absl::StrCat("perf script failed (exit ", *scripted, ")"));
  return recording;
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
    return absl::UnavailableError(absl::StrCat(
        "perf record failed (", PerfEnd(*recorded), "). If the kernel refused: as root, or with "
        "sysctl kernel.perf_event_paranoid=1 (now ", ParanoidText(),
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
  absl::StatusOr<FoldedStacks> stacks = ParsePerfScript(script, fold);
  if (!stacks.ok()) return PerfOutputNotUnderstood(stacks.status());
  return stacks;
}

}  // namespace backendlab::profiling
