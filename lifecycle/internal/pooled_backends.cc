// `--mode=prefork`: a pool of pre-forked backends, each handed a connection
// at a time over its channel and reset between them.
#include <sys/mman.h>
#include <sys/wait.h>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/interrupt.h"
#include "base/resource_usage.h"
#include "lifecycle/backend.h"
#include "lifecycle/internal/backends.h"
#include "lifecycle/internal/children.h"
#include "lifecycle/internal/io.h"
#include "lifecycle/internal/postmaster_state.h"
#include "lifecycle/internal/protocol.h"

namespace backendlab::lifecycle::internal {
namespace {

// How often the postmaster looks for a busy pre-forked backend that is
// stopped (kStoppedMemberNs says how long one may stay so).
constexpr int64_t kMemberCheckNs = 1'000'000'000;

bool StoppedBySignal(int status) {
  return WIFSIGNALED(status) &&
         std::find(std::begin(kStopSignals), std::end(kStopSignals), WTERMSIG(status)) != std::end(kStopSignals);
}

}  // namespace

class PooledBackends final : public Backends {
 public:
  explicit PooledBackends(Postmaster& pm) : pm_(pm), children_(pm.config().reap_pidfd, pm.config().nslots) {}

  // Built before serving: the pool's start is no connection's. A stop (the
  // control pipe's EOF: the tool was stopped, or died) is looked for
  // between forks, as the loop looks between connections, so that no
  // member is forked after it.
  void Build() override {
    const Message::Usage before_pool = ProcessAndReaped();
    before_pool_cpu_ns_ = before_pool.user_ns + before_pool.system_ns;
    const size_t n = static_cast<size_t>(pm_.config().pool);
    void* members = mmap(nullptr, n * sizeof(MemberShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    BACKENDLAB_CHECK(members != MAP_FAILED);
    members_ = static_cast<MemberShared*>(members);
    pool_.assign(n, Member{});
    for (size_t i = 0; i < pool_.size() && !pm_.failed() && !pm_.stopping(); ++i) {
      if (!StartMember(i) || !AwaitReady(i)) break;  // it died (reaped later, the run fails), stopped, or a stop came
      pool_[i].idle = pool_[i].ready = true;
      pollfd control = {pm_.config().control_fd, POLLIN, 0};
      if (poll(&control, 1, 0) > 0) pm_.ControlSaid();
    }
  }

  bool CanAccept() const override {
    return std::any_of(pool_.begin(), pool_.end(), [](const Member& m) { return m.channel >= 0 && m.idle; });
  }
  size_t FreeSlot() const override {
    size_t slot = 0;
    while (pool_[slot].channel < 0 || !pool_[slot].idle) ++slot;
    return slot;
  }

  bool Start(size_t slot, int client_fd, const ResourceSample& before) override {
    // The connection's descriptor and its slot to the member; false if the
    // member is gone (its death is reaped, its connection never served).
    const bool handed = SendDescriptor(pool_[slot].channel, slot, client_fd);
    pm_.SetParentCost(slot, before);
    close(client_fd);  // the member holds its own copy now
    if (handed) {
      pool_[slot].idle = false;
      pool_[slot].busy = true;
    }
    return handed;
  }

  void AddPollFds(std::vector<pollfd>& fds) const override {
    for (const Member& m : pool_) fds.push_back({m.channel, POLLIN, 0});
  }
  void Polled(const pollfd* fds) override {
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (fds[i].fd >= 0 && fds[i].fd == pool_[i].channel && (fds[i].revents & (POLLIN | POLLHUP))) MemberSaid(i);
    }
    if (closing_ && !AnyBusy()) ClosePool();
    CheckStoppedMembers();
  }
  // While a member serves a connection, CheckStoppedMembers looks every second.
  int PollTimeoutMs() const override { return AnyBusy() ? static_cast<int>(kMemberCheckNs / 1'000'000) : -1; }

  void Reap() override {
    children_.Reap([this](pid_t pid, size_t slot, int status, const rusage&) { MemberEnded(slot, pid, status); },
                   [this](size_t slot) { pm_.Freed(slot); });
  }

  size_t Live() const override { return children_.size(); }
  size_t Serving() const override {
    return static_cast<size_t>(std::count_if(pool_.begin(), pool_.end(), [](const Member& m) { return m.busy; }));
  }

  // Pre-forked backends are never reaped while serving: what each did
  // since it was built, as it said after its latest connection.
  void CompleteUsage(Message::Usage& u) const override {
    for (size_t i = 0; i < pool_.size(); ++i) {
      const Message::Usage& b = members_[i].base;
      const Message::Usage& l = members_[i].latest;
      u.user_ns += l.user_ns - b.user_ns;
      u.system_ns += l.system_ns - b.system_ns;
      u.minor_faults += l.minor_faults - b.minor_faults;
      u.major_faults += l.major_faults - b.major_faults;
      u.context_switches += l.context_switches - b.context_switches;
    }
  }

  // Members stop once none serves a connection: the server's usage first
  // (they are not reaped before), then their channels close.
  void StopAccepting() override { closing_ = true; }
  void EndAll() override {
    ClosePool();
    children_.KillEach();
  }
  void KillAll() override { children_.KillAndWait(); }

  // The server's CPU from before the pool was built to its last member
  // reaped, less the usage sent (Postmaster::SendUsage), which counts each
  // member from after it was built. What is left is the pool's build and
  // end (and, with held connections, their opening and what follows the
  // usage): no connection's, and no figure's but this.
  void Finish() override {
    if (!pm_.usage_sent() || pm_.failed()) return;
    const Message::Usage end = ProcessAndReaped();
    Message m{};
    m.type = Message::kPoolOutside;
    m.value = end.user_ns + end.system_ns - before_pool_cpu_ns_ - pm_.sent_cpu_ns();
    pm_.Send(m);
  }

 private:
  // Each member's process and channel, and, in shared memory, its own usage
  // when it was built (base) and after its latest connection (latest), and
  // its counters after its last call (end).
  struct Member {
    pid_t pid = 0;
    int channel = -1;   // the postmaster's end; -1: closed
    bool idle = false;   // built, no connection
    bool busy = false;   // serving the connection in its slot (its index)
    bool ready = false;  // it said it was built, once
    int64_t stopped_since = 0;  // busy and found stopped since then (CheckStoppedMembers); 0: not
  };
  struct MemberShared {
    Message::Usage base, latest;
    ResourceSample end;
  };

  bool StartMember(size_t i);
  [[noreturn]] void MemberChild(size_t i, int channel);
  void MemberSaid(size_t i);
  void MemberEnded(size_t slot, pid_t pid, int status);
  void ReplaceMember(size_t i);
  void ClosePool();
  // Kills a busy member that has stayed stopped kStoppedMemberNs and fails
  // the run naming it; looks every kMemberCheckNs.
  void CheckStoppedMembers();
  // While the pool is built: member i's ready byte, true once it came;
  // false if the member died, stayed stopped (CheckStoppedMembers), or the
  // tool asked for a stop.
  bool AwaitReady(size_t i);
  bool AnyBusy() const {
    return std::any_of(pool_.begin(), pool_.end(), [](const Member& m) { return m.channel >= 0 && m.busy; });
  }

  Postmaster& pm_;
  Children children_;
  std::vector<Member> pool_;
  MemberShared* members_ = nullptr;
  bool closing_ = false;  // told to stop: usage once no member is busy, then channels closed
  int64_t members_checked_ns_ = 0;  // CheckStoppedMembers' last look
  int64_t before_pool_cpu_ns_ = 0;  // ProcessAndReaped's CPU before the pool's build
};

bool PooledBackends::StartMember(size_t i) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    pm_.Fail(FailedCall::kSocketpair, errno);
    return false;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(pair[0]);
    MemberChild(i, pair[1]);
  }
  const int error = errno;
  close(pair[1]);
  if (pid < 0) {
    close(pair[0]);
    pm_.Fail(FailedCall::kFork, error);
    return false;
  }
  pool_[i] = Member{.pid = pid, .channel = pair[0], .idle = false, .busy = false};
  children_.Add(pid, i);
  return true;
}

// A pre-forked backend: a backend child's set-up, its structures built once,
// then a connection at a time until its channel reaches EOF.
void PooledBackends::MemberChild(size_t i, int channel) {
  prctl(PR_SET_NAME, "backend");
  pm_.SetUpChild();
  for (size_t j = 0; j < pool_.size(); ++j) {
    if (j != i && pool_[j].channel >= 0) close(pool_[j].channel);
  }
  absl::StatusOr<std::unique_ptr<PooledBackend>> backend = PooledBackend::Build(*pm_.config().env);
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
    const absl::Status status = (*backend)->Serve(fd, received, pm_.record(i));
    if (!status.ok()) std::fprintf(stderr, "backendlab backend %d: %s\n", getpid(), std::string(status.message()).c_str());
    close(fd);
    members_[i].latest = OwnUsage();
    members_[i].end = SampleThread();
    if (!SendByte(channel, status.ok() ? kPoolDone : kPoolError)) _exit(0);
  }
}

// Member i's byte: built, or a connection done (its record completed and
// sent, the member idle again); EOF: it is dying, and Reap will see it.
void PooledBackends::MemberSaid(size_t i) {
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
      children_.Forget(pid);
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
  pool_[i].busy = false;
  pool_[i].idle = true;
  pm_.Ended(i, {.pid = pool_[i].pid,
                .wait_status = c == kPoolDone ? 0 : kBackendErrorExit << 8,
                .usage = nullptr,
                .forked = true,
                .reaped_ns = read_done.wall_ns,
                .thread_end = &members_[i].end,
                .join_cost = read_done - before});
}

// Member `slot`, process `pid`, ended with `status` (reaped): its
// connection, if it had one, is a crashed (or stopped) backend's; it is
// replaced while the run goes on, unless it never got built (a new one
// would fail the same way: the run fails) or a stop signal to the group
// ended it (the run's end, not a member's death).
void PooledBackends::MemberEnded(size_t slot, pid_t pid, int status) {
  const bool busy = pool_[slot].busy;
  const bool was_ready = pool_[slot].pid != pid || pool_[slot].ready;
  if (pool_[slot].pid == pid) {
    if (pool_[slot].channel >= 0) close(pool_[slot].channel);
    pool_[slot] = Member{};
  }
  if (busy) pm_.Ended(slot, {.pid = pid, .wait_status = status, .usage = nullptr, .forked = true, .reaped_ns = NowNs()});
  if (!pm_.stopping() && !was_ready) {
    pm_.Fail(FailedCall::kPoolStart, 0);
  } else if (!pm_.stopping() && (WIFSIGNALED(status) || WEXITSTATUS(status) != 0) && !StoppedBySignal(status)) {
    ReplaceMember(slot);
  }
}

void PooledBackends::ReplaceMember(size_t i) {
  Message m{};
  m.type = Message::kReplaced;
  m.value = pool_[i].pid;
  if (StartMember(i)) pm_.Send(m);  // ready when it says so (MemberSaid)
}

// A busy member that is stopped (SIGSTOP, a debugger's stop) keeps its
// client waiting, and the run with it; one stopped while it is built keeps
// the pool's build waiting: seen stopped at every look for
// kStoppedMemberNs, it is killed (reaped as any dead member) and the run
// fails naming it. A longer gap between looks than a few kMemberCheckNs
// means this process was stopped too (^Z stops the whole group) or
// starved: the count starts again.
void PooledBackends::CheckStoppedMembers() {
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
    } else if (now - m.stopped_since >= kStoppedMemberNs && !pm_.failed()) {
      kill(m.pid, SIGKILL);
      Message failed{};
      failed.type = Message::kFailed;
      failed.call = FailedCall::kMemberStopped;
      failed.value = static_cast<int64_t>(i);
      failed.record = pm_.record(i);
      failed.record.pid = m.pid;
      if (!m.busy) failed.record.sequence = -1;  // stopped while it was built
      pm_.Fail(failed);
    }
  }
}

bool PooledBackends::AwaitReady(size_t i) {
  for (;;) {
    pollfd fds[2] = {{pool_[i].channel, POLLIN, 0}, {pm_.config().control_fd, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(kMemberCheckNs / 1'000'000));
    if (n < 0 && errno != EINTR) return false;
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      char c = 0;
      return ReadAll(pool_[i].channel, &c, 1) == 1 && c == kPoolReady;
    }
    if (n > 0 && (fds[1].revents & (POLLIN | POLLHUP))) pm_.ControlSaid();
    CheckStoppedMembers();
    if (pm_.stopping() || pm_.failed()) return false;
  }
}

void PooledBackends::ClosePool() {
  if (pool_.empty()) return;
  pm_.SendUsage();
  for (Member& m : pool_) {
    if (m.channel >= 0) close(m.channel);
    m.channel = -1;
    m.idle = false;  // `busy` stays: a member that dies serving is reported when it is reaped
  }
  closing_ = false;
}

std::unique_ptr<Backends> MakePooledBackends(Postmaster& pm) { return std::make_unique<PooledBackends>(pm); }

}  // namespace backendlab::lifecycle::internal
