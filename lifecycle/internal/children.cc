// The postmaster's backend processes, and their reaping.
#include "lifecycle/internal/children.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <iterator>

#include "base/check.h"

namespace backendlab::lifecycle::internal {

Children::Children(bool by_pidfd, size_t nslots) : by_pidfd_(by_pidfd) {
  if (!by_pidfd_) return;
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  BACKENDLAB_CHECK(epoll_ >= 0);
  pidfds_.assign(nslots, -1);
}

Children::~Children() {
  for (const int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
  if (epoll_ >= 0) close(epoll_);
}

int Children::Watch(pid_t pid, size_t slot) {
  if (!by_pidfd_) return 0;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  int error = pidfd < 0 ? errno : 0;
  if (pidfd >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;  // readable once the process has exited
    ev.data.u64 = static_cast<uint64_t>(pid);
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, pidfd, &ev) != 0) {
      error = errno;
      close(pidfd);
    } else {
      pidfds_[slot] = pidfd;
    }
  }
  if (error != 0) by_pidfd_ = false;
  return error;
}

void Children::Reap(absl::FunctionRef<void(pid_t, size_t, int, const rusage&)> reaped, absl::FunctionRef<void(size_t)> lost) {
  if (by_pidfd_) {
    ReapByPidfd(reaped);
    return;
  }
  int status;
  rusage usage;
  pid_t pid;
  while ((pid = wait4(-1, &status, WNOHANG, &usage)) != 0) {
    if (pid < 0) {
      if (errno == EINTR) continue;
      // ECHILD: nothing left to wait for (children reaped elsewhere)
      for (const auto& [gone, slot] : live_) lost(slot);
      live_.clear();
      break;
    }
    Reaped(pid, status, usage, reaped);
  }
}

// Each child whose pidfd is readable has exited: wait4 on its pid alone.
void Children::ReapByPidfd(absl::FunctionRef<void(pid_t, size_t, int, const rusage&)> reaped) {
  epoll_event exited[64];
  int n;
  do {
    n = epoll_wait(epoll_, exited, static_cast<int>(std::size(exited)), 0);
    for (int i = 0; i < n; ++i) {
      const pid_t pid = static_cast<pid_t>(exited[i].data.u64);
      int status;
      rusage usage;
      pid_t got;
      while ((got = wait4(pid, &status, WNOHANG, &usage)) < 0 && errno == EINTR) {
      }
      if (got == pid) Reaped(pid, status, usage, reaped);
    }
  } while (n == static_cast<int>(std::size(exited)));
}

void Children::Reaped(pid_t pid, int status, const rusage& usage, absl::FunctionRef<void(pid_t, size_t, int, const rusage&)> reaped) {
  auto it = live_.find(pid);
  if (it == live_.end()) return;
  const size_t slot = it->second;
  live_.erase(it);
  if (!pidfds_.empty() && pidfds_[slot] >= 0) {
    close(pidfds_[slot]);  // and out of the epoll set with it
    pidfds_[slot] = -1;
  }
  reaped(pid, slot, status, usage);
}

void Children::Forget(pid_t pid) { live_.erase(pid); }

void Children::KillEach() const {
  for (const auto& [pid, slot] : live_) kill(pid, SIGKILL);
}

void Children::KillAndWait() {
  KillEach();
  while (!live_.empty()) {
    int status;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    live_.erase(pid);
  }
}

}  // namespace backendlab::lifecycle::internal
