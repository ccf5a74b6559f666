// `--mode=prefork`: a pool of pre-forked backends, each handed a connection
// at a time over its channel and reset between them.
#include <sys/mman.h>
#include <sys/wait.h>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/check.h"
#include "base/fresh_allocations.h"
#include "base/interrupt.h"
#include "base/private_pages.h"
#include "base/resource_usage.h"
#include "lifecycle/backend.h"
#include "lifecycle/internal/postmaster_state.h"
#include "lifecycle/internal/protocol.h"

namespace backendlab::lifecycle::internal {
namespace {

bool StoppedBySignal(int status) {
  return WIFSIGNALED(status) &&
         std::find(std::begin(kStopSignals), std::end(kStopSignals), WTERMSIG(status)) != std::end(kStopSignals);
}

}  // namespace

bool Postmaster::StartMember(size_t i) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    Fail(FailedCall::kSocketpair, errno);
    return false;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(pair[0]);
    MemberChild(i, pair[1], sigfd_);
  }
  const int error = errno;
  close(pair[1]);
  if (pid < 0) {
    close(pair[0]);
    Fail(FailedCall::kFork, error);
    return false;
  }
  pool_[i] = Member{.pid = pid, .channel = pair[0], .idle = false, .busy = false};
  live_[pid] = i;
  return true;
}

// A pre-forked backend: a backend child's set-up, its structures built once,
// then a connection at a time until its channel reaches EOF.
void Postmaster::MemberChild(size_t i, int channel, int sigfd) {
  prctl(PR_SET_NAME, "backend");
  close(c_.listen_fd);
  close(c_.control_fd);
  if (results_fd_ >= 0) close(results_fd_);
  if (c_.samples_fd >= 0) close(c_.samples_fd);
  close(sigfd);
  for (size_t j = 0; j < pool_.size(); ++j) {
    if (j != i && pool_[j].channel >= 0) close(pool_[j].channel);
  }
  if (c_.env->death_own_fd >= 0) close(c_.env->death_own_fd);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != pid_) _exit(1);
  UseDefaultMallocThresholds();
  DefaultStopSignals();
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  absl::StatusOr<std::unique_ptr<PooledBackend>> backend = PooledBackend::Build(*c_.env);
  if (!backend.ok()) {
    std::fprintf(stderr, "backendlab backend %d: %s\n", getpid(), std::string(backend.status().message()).c_str());
    _exit(kBackendErrorExit);
  }
  members_[i].base = OwnUsage();
  members_[i].latest = members_[i].base;
  if (!SendByte(channel, kPoolReady)) _exit(0);
  for (;;) {
    uint64_t slot = 0;
    int fd = -1;
    const int got = ReceiveDescriptor(channel, slot, fd);
    if (got == 0) _exit(0);  // EOF: the postmaster is done with us
    const ResourceSample received = SampleThread();
    if (got < 0 || slot != i) _exit(4);
    const absl::Status status = (*backend)->Serve(fd, received, slots_[i]);
    if (!status.ok()) std::fprintf(stderr, "backendlab backend %d: %s\n", getpid(), std::string(status.message()).c_str());
    close(fd);
    members_[i].latest = OwnUsage();
    members_[i].end = SampleThread();
    if (!SendByte(channel, status.ok() ? kPoolDone : kPoolError)) _exit(0);
  }
}

// The connection's descriptor and its slot to member `slot`; false if the
// member is gone (its death is reaped, its connection never served).
bool Postmaster::HandOff(size_t slot, int client_fd) { return SendDescriptor(pool_[slot].channel, slot, client_fd); }

// Member i's byte: built, or a connection done (its record completed and
// sent, the member idle again); EOF: it is dying, and Reap will see it.
void Postmaster::MemberSaid(size_t i) {
  const ResourceSample before = SampleThread();
  char c = 0;
  const ssize_t n = read(pool_[i].channel, &c, 1);
  if (n <= 0) {
    if (n < 0 && errno == EINTR) return;
    // EOF: the member is exiting (a member closes its channel only so; its
    // memory is gone before its descriptors). Waited for here, not left to
    // SIGCHLD, which may come after the loop's last connection and the
    // stop: its connection is reported and it is replaced in turn.
    const pid_t pid = pool_[i].pid;
    int status = 0;
    pid_t waited;
    while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (waited == pid) {
      live_.erase(pid);
      MemberEnded(i, pid, status);
    } else {
      close(pool_[i].channel);  // reaped already (Reap handles it)
      pool_[i].channel = -1;
      pool_[i].idle = false;
    }
    return;
  }
  if (c == kPoolReady) {
    pool_[i].idle = pool_[i].ready = true;
    return;
  }
  if (!pool_[i].busy) return;
  const ResourceSample read_done = SampleThread();
  Message m{};
  m.type = Message::kBackend;
  m.record = slots_[i];
  CompleteRecord({.pid = pool_[i].pid,
                  .wait_status = c == kPoolDone ? 0 : kBackendErrorExit << 8,
                  .usage = nullptr,
                  .forked = true,
                  .fork_parent_cost = fork_parent_cost_[i],
                  .reaped_ns = read_done.wall_ns,
                  .thread_end = &members_[i].end,
                  .join_cost = read_done - before},
                 m.record);
  pool_[i].busy = false;
  pool_[i].idle = true;
  Freed(i);
  Send(m);
}

// Member `slot`, process `pid`, ended with `status` (reaped): its
// connection, if it had one, is a crashed (or stopped) backend's; it is
// replaced while the run goes on, unless it never got built (a new one
// would fail the same way: the run fails) or a stop signal to the group
// ended it (the run's end, not a member's death).
void Postmaster::MemberEnded(size_t slot, pid_t pid, int status) {
  const bool busy = pool_[slot].busy;
  const bool was_ready = pool_[slot].pid != pid || pool_[slot].ready;
  if (pool_[slot].pid == pid) {
    if (pool_[slot].channel >= 0) close(pool_[slot].channel);
    pool_[slot] = Member{};
  }
  if (busy) {
    Message m{};
    m.type = Message::kBackend;
    m.record = slots_[slot];
    CompleteRecord({.pid = pid,
                    .wait_status = status,
                    .usage = nullptr,
                    .forked = true,
                    .fork_parent_cost = fork_parent_cost_[slot],
                    .reaped_ns = NowNs()},
                   m.record);
    Send(m);
    Freed(slot);
  }
  if (!stopping_ && !was_ready) {
    Fail(FailedCall::kPoolStart, 0);
  } else if (!stopping_ && (WIFSIGNALED(status) || WEXITSTATUS(status) != 0) && !StoppedBySignal(status)) {
    ReplaceMember(slot);
  }
}

void Postmaster::ReplaceMember(size_t i) {
  Message m{};
  m.type = Message::kReplaced;
  m.value = pool_[i].pid;
  if (StartMember(i)) Send(m);  // ready when it says so (MemberSaid)
}

// A busy member that is stopped (SIGSTOP, a debugger's stop) keeps its
// client waiting, and the run with it; one stopped while it is built keeps
// the pool's build waiting: seen stopped at every look for
// kStoppedMemberNs, it is killed (reaped as any dead member) and the run
// fails naming it. A longer gap between looks than a few kMemberCheckNs
// means this process was stopped too (^Z stops the whole group) or
// starved: the count starts again.
void Postmaster::CheckStoppedMembers() {
  const int64_t now = NowNs();
  if (now - members_checked_ns_ < kMemberCheckNs) return;
  const bool resumed = now - members_checked_ns_ > 3 * kMemberCheckNs;
  members_checked_ns_ = now;
  for (size_t i = 0; i < pool_.size(); ++i) {
    Member& m = pool_[i];
    siginfo_t info{};
    // WNOWAIT leaves the stop to be seen again; a pid's wait does not look
    // through the other children.
    const bool stopped = (m.busy || !m.ready) && m.pid > 0 && waitid(P_PID, static_cast<id_t>(m.pid), &info, WSTOPPED | WNOHANG | WNOWAIT) == 0 &&
                         info.si_pid == m.pid && info.si_code == CLD_STOPPED;
    if (!stopped || resumed) {
      m.stopped_since = 0;
    } else if (m.stopped_since == 0) {
      m.stopped_since = now;
    } else if (now - m.stopped_since >= kStoppedMemberNs && !failed_) {
      kill(m.pid, SIGKILL);
      Message failed{};
      failed.type = Message::kFailed;
      failed.call = FailedCall::kMemberStopped;
      failed.value = static_cast<int64_t>(i);
      failed.record = slots_[i];
      failed.record.pid = m.pid;
      if (!m.busy) failed.record.sequence = -1;  // stopped while it was built
      Fail(failed);
    }
  }
}

bool Postmaster::AwaitReady(size_t i) {
  for (;;) {
    pollfd fds[2] = {{pool_[i].channel, POLLIN, 0}, {c_.control_fd, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(kMemberCheckNs / 1'000'000));
    if (n < 0 && errno != EINTR) return false;
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      char c = 0;
      return ReadAll(pool_[i].channel, &c, 1) == 1 && c == kPoolReady;
    }
    if (n > 0 && (fds[1].revents & (POLLIN | POLLHUP))) ControlSaid();
    CheckStoppedMembers();
    if (stopping_ || failed_) return false;
  }
}

void Postmaster::ClosePool() {
  if (pool_.empty()) return;
  SendUsage();
  for (Member& m : pool_) {
    if (m.channel >= 0) close(m.channel);
    m.channel = -1;
    m.idle = false;  // `busy` stays: a member that dies serving is reported when it is reaped
  }
  pool_closing_ = false;
}

}  // namespace backendlab::lifecycle::internal
