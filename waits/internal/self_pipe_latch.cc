// The process-wide half of the 2010 self-pipe latches: the pipe, `waiting`,
// the SIGUSR1 handler and SetLatch.
#include "waits/internal/self_pipe_latch.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "waits/internal/my_pid.h"

namespace backendlab::waits::internal {
namespace {

std::atomic<bool> g_owned{false};
volatile sig_atomic_t g_waiting = 0;
int g_read_fd = -1;
int g_write_fd = -1;
std::atomic<bool> g_handler_installed{false};

// sendSelfPipeByte(): a full pipe (EAGAIN) is fine, it will wake us anyway.
void SendSelfPipeByte() noexcept {
  const char dummy = 0;
  ssize_t n;
  do {
    n = write(g_write_fd, &dummy, 1);
  } while (n < 0 && errno == EINTR);
}

// latch_sigusr1_handler(): runs in signal context; a byte only while we wait.
void OnSigusr1(int) {
  const int saved = errno;
  if (g_waiting) SendSelfPipeByte();
  errno = saved;
}

}  // namespace

absl::Status OwnSelfPipe() {
  if (g_owned.exchange(true)) {
    return absl::FailedPreconditionError("this process already owns a self-pipe latch (one self-pipe per process)");
  }
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    g_owned.store(false);
    return absl::UnavailableError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  g_read_fd = fds[0];
  g_write_fd = fds[1];
  // pqsignal's flags: SA_RESTART (select() and poll() still fail with EINTR:
  // Linux never restarts them).
  // Installed once and never restored: a setter may have read our pid
  // just before Disown cleared it, and its SIGUSR1 may land after; with the
  // default action restored it would kill us. Not waiting, the handler
  // does nothing (PostgreSQL keeps its handler until exit too).
  if (!g_handler_installed.load()) {
    struct sigaction action {};
    action.sa_handler = &OnSigusr1;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGUSR1, &action, nullptr) != 0) {
      const int err = errno;
      DisownSelfPipe();
      return absl::UnavailableError(absl::StrCat("sigaction: ", std::strerror(err)));
    }
    g_handler_installed.store(true);
  }
  return absl::OkStatus();
}

void DisownSelfPipe() noexcept {
  if (!g_owned.load()) return;
  g_waiting = 0;
  if (g_read_fd >= 0) close(g_read_fd);
  if (g_write_fd >= 0) close(g_write_fd);
  g_read_fd = g_write_fd = -1;
  g_owned.store(false);
}

int SelfPipeReadFd() { return g_read_fd; }

void DrainSelfPipe() noexcept {
  char buf[16];
  for (;;) {
    const ssize_t n = read(g_read_fd, buf, sizeof buf);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return;  // EAGAIN: empty
  }
}

void SetSelfPipeWaiting(bool waiting) noexcept { g_waiting = waiting ? 1 : 0; }

void SetSelfPipeLatch(LatchState& s) noexcept {
  // 2010's had no barrier; later versions (the 2016 code) begin with one,
  // and ResetLatch has one too (see SelfPipeLatch::Reset): an mfence each.
  FullBarrier();
  if (s.is_set.load(std::memory_order_relaxed) != 0) return;
  s.is_set.store(1, std::memory_order_relaxed);
  const pid_t owner = s.owner_pid.load(std::memory_order_relaxed);
  if (owner == 0) return;
  if (owner == MyProcPid()) {
    SendSelfPipeByte();  // 2010: for our own latch, a byte always
  } else {
    kill(owner, SIGUSR1);  // 2010: a signal always, waiting or not
  }
}

}  // namespace backendlab::waits::internal
