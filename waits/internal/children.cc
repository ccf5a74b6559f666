// Forking, pinning and reaping an experiment's processes.
#include "waits/internal/children.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/interrupt.h"
#include "base/resource_usage.h"

namespace backendlab::waits::internal {

void ChildReport::Fail(const std::string& message) {
  std::snprintf(error, sizeof error, "%s", message.c_str());
}

CpuTimes OwnCpuTimes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return {ru.ru_utime.tv_sec * 1'000'000'000LL + ru.ru_utime.tv_usec * 1000LL,
          ru.ru_stime.tv_sec * 1'000'000'000LL + ru.ru_stime.tv_usec * 1000LL};
}

absl::Status PinToCpu(int cpu) {
  if (cpu < 0) return absl::OkStatus();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    return absl::UnavailableError(absl::StrCat("sched_setaffinity(cpu ", cpu, "): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

Children::~Children() {
  for (pid_t pid : pids_) kill(pid, SIGKILL);
  for (pid_t pid : pids_) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

absl::Status Children::Start(absl::FunctionRef<int()> body) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::UnavailableError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the tool died before the prctl
    IgnoreStopSignals();
    _exit(body());
  }
  pids_.push_back(pid);
  return absl::OkStatus();
}

absl::Status Children::ReapAll(int64_t timeout_ms, const std::string& what, std::span<const ChildReport> reports,
                               const std::function<void()>& on_stop) {
  int64_t deadline = NowNs() + timeout_ms * 1'000'000;
  std::vector<int> statuses(pids_.size(), -1);
  size_t left = pids_.size();
  bool killed = false;
  bool told = false;
  while (left > 0) {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (statuses[i] != -1) continue;
      int status;
      const pid_t r = waitpid(pids_[i], &status, WNOHANG);
      if (r == pids_[i]) {
        statuses[i] = status;
        --left;
      }
    }
    if (left == 0) break;
    if (!told && StopRequested()) {
      told = true;
      if (on_stop) on_stop();
      deadline = NowNs() + timeout_ms * 1'000'000;
    }
    if (!killed && NowNs() > deadline) {
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (statuses[i] == -1) kill(pids_[i], SIGKILL);
      }
      killed = true;
    }
    const timespec nap{0, 200'000};
    nanosleep(&nap, nullptr);
  }
  pids_.clear();
  // The child to name: one that said why it failed, else one that failed on
  // its own, else one we killed (it may only have waited for another).
  auto said = [&](size_t i) { return i < reports.size() && reports[i].error[0] != '\0'; };
  auto failed = [&](size_t i) { return !WIFEXITED(statuses[i]) || WEXITSTATUS(statuses[i]) != 0; };
  auto ours = [&](size_t i) { return killed && WIFSIGNALED(statuses[i]) && WTERMSIG(statuses[i]) == SIGKILL; };
  std::optional<size_t> named;
  for (auto rank : {0, 1, 2}) {
    for (size_t i = 0; i < statuses.size() && !named; ++i) {
      if (failed(i) && (rank == 2 || (rank == 0 && said(i)) || (rank == 1 && !ours(i)))) named = i;
    }
  }
  if (!named) return absl::OkStatus();
  const size_t i = *named;
  const int st = statuses[i];
  std::string why;
  if (said(i)) {
    why = reports[i].error;
  } else if (WIFEXITED(st)) {
    why = absl::StrCat("exited with status ", WEXITSTATUS(st));
  } else {
    const char* name = sigabbrev_np(WTERMSIG(st));
    why = absl::StrCat("killed by SIG", name != nullptr ? name : "?",
                       ours(i) ? absl::StrCat(" (still running ", timeout_ms, " ms after the run's end)") : "");
  }
  return absl::UnavailableError(absl::StrCat(what, " ", i, ": ", why));
}

}  // namespace backendlab::waits::internal
