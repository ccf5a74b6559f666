// The postmaster process: poll over the listening socket, a signalfd for
// SIGCHLD, the control pipe and (threads) a pipe of ended threads; accept,
// fork or start a thread, reap or join, report.
#include "lifecycle/internal/postmaster.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "base/check.h"
#include "base/fresh_allocations.h"
#include "base/interrupt.h"
#include "base/private_pages.h"
#include "base/resource_usage.h"
#include "lifecycle/internal/io.h"
#include "lifecycle/internal/protocol.h"
#include "lifecycle/internal/sample_slots.h"
#include "lifecycle/internal/weight_work.h"

namespace backendlab::lifecycle::internal {
namespace {

bool StoppedBySignal(int status) {
  return WIFSIGNALED(status) &&
         std::find(std::begin(kStopSignals), std::end(kStopSignals), WTERMSIG(status)) != std::end(kStopSignals);
}

// How long the postmaster waits for its backends after being told to stop
// before it SIGKILLs them: a backend whose client is gone exits at once.
constexpr int64_t kStopGraceNs = 5'000'000'000;

class Postmaster {
 public:
  explicit Postmaster(const PostmasterConfig& config) : c_(config), results_fd_(config.results_fd) {}

  [[noreturn]] void Main();

 private:
  // A tool that is gone reads nothing more: stop sending, keep reaping and
  // cleaning up (SIGPIPE is ignored in Main).
  void Send(const Message& m) {
    if (results_fd_ >= 0 && !WriteAll(results_fd_, &m, sizeof m)) {
      close(results_fd_);
      results_fd_ = -1;
    }
  }

  // getrusage of this process and of the children it has reaped, summed.
  // getrusage of the calling process alone (a pre-forked backend's).
  static Message::Usage OwnUsage() {
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    Message::Usage u{};
    u.user_ns = int64_t{r.ru_utime.tv_sec} * 1'000'000'000 + int64_t{r.ru_utime.tv_usec} * 1000;
    u.system_ns = int64_t{r.ru_stime.tv_sec} * 1'000'000'000 + int64_t{r.ru_stime.tv_usec} * 1000;
    u.minor_faults = r.ru_minflt;
    u.major_faults = r.ru_majflt;
    u.context_switches = r.ru_nvcsw + r.ru_nivcsw;
    return u;
  }

  Message::Usage SelfAndChildren() const {
    const bool threads = c_.threads;
    Message::Usage u{};
    for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
      rusage r{};
      getrusage(who, &r);
      u.user_ns += int64_t{r.ru_utime.tv_sec} * 1'000'000'000 + int64_t{r.ru_utime.tv_usec} * 1000;
      u.system_ns += int64_t{r.ru_stime.tv_sec} * 1'000'000'000 + int64_t{r.ru_stime.tv_usec} * 1000;
      u.minor_faults += r.ru_minflt;
      u.major_faults += r.ru_majflt;
      u.context_switches += r.ru_nvcsw + r.ru_nivcsw;
      if (who == RUSAGE_SELF) u.postmaster_ns = u.user_ns + u.system_ns;
    }
    // With backend threads, the process is the postmaster and its backends:
    // its own share is its thread's (called on the postmaster's thread).
    if (threads) u.postmaster_ns = SampleThread().cpu_ns;
    // Pre-forked backends are never reaped while serving: what each did
    // since it was built, as it said after its latest connection.
    for (size_t i = 0; i < pool_.size(); ++i) {
      const Message::Usage& b = members_[i].base;
      const Message::Usage& l = members_[i].latest;
      u.user_ns += l.user_ns - b.user_ns;
      u.system_ns += l.system_ns - b.system_ns;
      u.minor_faults += l.minor_faults - b.minor_faults;
      u.major_faults += l.major_faults - b.major_faults;
      u.context_switches += l.context_switches - b.context_switches;
    }
    return u;
  }

  void SendBaseline() {
    for (int i = 0; i < c_.baseline_forks; ++i) {
      Message m{};
      m.type = Message::kBaselineFork;
      m.value = BareFork();
      if (m.value >= 0) Send(m);
    }
  }

  // A call that failed for good: tell the tool (one message, which it turns
  // into the run's one line), stop accepting, and end with status 1 once the
  // live backends are reaped.
  void Fail(FailedCall call, int error) {
    if (failed_) return;
    failed_ = true;
    Message m{};
    m.type = Message::kFailed;
    m.call = call;
    m.value = error;
    Send(m);
    StopAccepting();
  }

  void StopAccepting() {
    if (stopping_) return;
    stopping_ = true;
    stop_deadline_ = NowNs() + kStopGraceNs;
    close(c_.listen_fd);  // no new connections from now on
    unlink(c_.socket_path.c_str());
    // Pre-forked backends stop once none serves a connection: the server's
    // usage first (they are not reaped before), then their channels close.
    if (c_.pool > 0) pool_closing_ = true;
  }

  // The server's usage since serving_start_, sent once.
  void SendUsage() {
    if (usage_sent_) return;
    usage_sent_ = true;
    const Message::Usage end = SelfAndChildren();
    Message m{};
    m.type = Message::kServerUsage;
    m.usage = {end.user_ns - serving_start_.user_ns,
               end.system_ns - serving_start_.system_ns,
               end.minor_faults - serving_start_.minor_faults,
               end.major_faults - serving_start_.major_faults,
               end.context_switches - serving_start_.context_switches,
               end.postmaster_ns - serving_start_.postmaster_ns};
    Send(m);
  }

  [[noreturn]] void BackendChild(size_t slot, int client_fd, int sigfd);
  void Accept(int sigfd);
  void Reap();
  // Threads: starts slot's backend on client_fd; false if it could not.
  bool StartThread(size_t slot, int client_fd);
  static void* ThreadMain(void* arg);
  void JoinEnded();
  size_t Live() const { return live_.size() + live_threads_; }
  // Backends serving a connection: the live ones, or the busy members of a pool.
  size_t Serving() const {
    if (c_.pool == 0) return Live();
    return static_cast<size_t>(std::count_if(pool_.begin(), pool_.end(), [](const Member& m) { return m.busy; }));
  }
  // Slot's backend took connection `sequence`: a held one is counted, and
  // the server's usage starts after the last held one's.
  void Taken(size_t slot, int64_t sequence) {
    slot_used_[slot] = true;
    if (sequence >= c_.hold) return;
    slot_held_[slot] = true;
    ++held_live_;
    // The held backends' starts are no connection's of the loop.
    if (sequence == c_.hold - 1) serving_start_ = SelfAndChildren();
  }
  // Slot's connection is over (its backend reaped, joined or idle again).
  void Freed(size_t slot) {
    slot_used_[slot] = false;
    if (slot_held_[slot]) {
      slot_held_[slot] = false;
      --held_live_;
    }
  }
  // Pre-forked backends.
  bool StartMember(size_t i);
  [[noreturn]] void MemberChild(size_t i, int channel, int sigfd);
  void MemberSaid(size_t i);
  bool HandOff(size_t slot, int client_fd);
  void ReplaceMember(size_t i);
  void ClosePool();
  bool AnyIdle() const {
    return std::any_of(pool_.begin(), pool_.end(), [](const Member& m) { return m.channel >= 0 && m.idle; });
  }
  bool AnyBusy() const {
    return std::any_of(pool_.begin(), pool_.end(), [](const Member& m) { return m.channel >= 0 && m.busy; });
  }
  void AppendSamples(int64_t sequence, const profiling::SampleBuffer& buffer);
  void StartSampling();
  void KillAndReapAll();
  void RemoveFiles() {
    unlink(c_.socket_path.c_str());
    rmdir(c_.dir.c_str());
  }

  const PostmasterConfig& c_;
  int results_fd_;
  std::optional<SampleSlots> sample_slots_;
  int64_t samples_lost_ = 0;  // after a failed write to samples_fd
  BackendRecord* slots_ = nullptr;  // shared with the backends
  std::vector<bool> slot_used_;
  std::vector<ResourceSample> fork_parent_cost_;  // per slot
  std::map<pid_t, size_t> live_;                   // pid -> slot
  // Per slot: its backend serves a held connection (CycleOptions::hold);
  // and how many do.
  std::vector<bool> slot_held_;
  size_t held_live_ = 0;
  // Threads: per slot, the thread, its connection (shut down to end it at a
  // stop), its tid, its counters after its last call, and its arena (one
  // from free_arenas_, or a new one).
  struct ThreadSlot {
    Postmaster* postmaster = nullptr;
    size_t slot = 0;
    pthread_t thread{};
    int client_fd = -1;
    int32_t tid = 0;
    int exit_code = 0;
    ResourceSample end;
    std::unique_ptr<PageArena> arena;
  };
  std::vector<ThreadSlot> threads_;
  // reuse_memory: the arenas of joined backends, the last one given back
  // first (a new backend takes the one most recently used).
  std::vector<std::unique_ptr<PageArena>> free_arenas_;
  // Pre-forked backends: each member's process and channel, and, in shared
  // memory, its own usage when it was built (base) and after its latest
  // connection (latest), and its counters after its last call (end).
  struct Member {
    pid_t pid = 0;
    int channel = -1;   // the postmaster's end; -1: closed
    bool idle = false;   // built, no connection
    bool busy = false;   // serving the connection in its slot (its index)
    bool ready = false;  // it said it was built, once
  };
  struct MemberShared {
    Message::Usage base, latest;
    ResourceSample end;
  };
  std::vector<Member> pool_;
  MemberShared* members_ = nullptr;
  int sigfd_ = -1;
  bool pool_closing_ = false;  // told to stop: usage once no member is busy, then channels closed
  size_t live_threads_ = 0;
  int ended_read_ = -1, ended_write_ = -1;  // ended threads write their slot number
  Message::Usage serving_start_{};
  bool usage_asked_ = false;  // kUsageByte came
  bool usage_sent_ = false;
  int64_t next_sequence_ = 0;
  pid_t pid_ = 0;
  bool stopping_ = false;
  bool failed_ = false;
  int64_t stop_deadline_ = 0;
};

void Postmaster::BackendChild(size_t slot, int client_fd, int sigfd) {
  BackendRecord& record = slots_[slot];
  // Timers are not inherited: arm this backend's before anything else, so
  // its start-up is sampled too (tagged `fork`, as the postmaster left it).
  if (sample_slots_) {
    if (absl::Status s = profiling::Sampler::RestartAfterFork(sample_slots_->Backend(slot)); !s.ok()) {
      std::fprintf(stderr, "backendlab backend %d: not sampled: %s\n", getpid(), std::string(s.message()).c_str());
    }
  }
  prctl(PR_SET_NAME, "backend");  // the name perf's samples carry
  close(c_.listen_fd);
  close(c_.control_fd);
  if (results_fd_ >= 0) close(results_fd_);
  if (c_.samples_fd >= 0) close(c_.samples_fd);
  close(sigfd);
  // The postmaster-death pipe's write end is the postmaster's alone: held
  // here too, it would never reach EOF.
  if (c_.env->death_own_fd >= 0) close(c_.env->death_own_fd);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the postmaster
  if (getppid() != pid_) _exit(1);   // it died before prctl took effect
  UseDefaultMallocThresholds();
  DefaultStopSignals();  // a backend dies of ^C as any process of the group does (SIGPIPE stays ignored)
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  const absl::Status status = RunBackend(*c_.env, client_fd, record);
  if (!status.ok()) std::fprintf(stderr, "backendlab backend %d: %s\n", getpid(), std::string(status.message()).c_str());
  // A weight profile's `exit` exit path ran libc's exit handlers at the end
  // of teardown (RunExitHandlers): what is left of exit() is _exit.
  _exit(status.ok() ? 0 : 3);
}

void Postmaster::Accept(int sigfd) {
  const int fd = accept4(c_.listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    // The client gave up (ECONNABORTED), or no connection after all: try
    // again on the next turn. Anything else (EMFILE, ENOMEM, ...) would
    // fail the same way forever.
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) Fail(FailedCall::kAccept, errno);
    return;
  }
  const int64_t accepted = NowNs();
  size_t slot = 0;
  if (c_.pool > 0) {
    while (pool_[slot].channel < 0 || !pool_[slot].idle) ++slot;  // Accept is only polled for when one is idle
  } else {
    while (slot_used_[slot]) ++slot;  // Accept is only polled for when one is free
  }
  BackendRecord& record = slots_[slot];
  record = BackendRecord{};
  record.sequence = next_sequence_++;
  record.accept_ns = accepted;
  // The client learns its connection's sequence number first, so that it
  // tells warm-up connections from measured ones by the same rule. A client
  // already gone makes this fail; its backend then finds it gone too.
  (void)WriteAll(fd, &record.sequence, sizeof record.sequence);
  const ResourceSample before = SampleThread();
  if (sample_slots_) {
    // The postmaster's own samples count from the first measured backend's
    // fork on, like every other figure; a backend's slot is emptied for it.
    if (record.sequence == c_.warmup) profiling::Sampler::SetBuffer(sample_slots_->Postmaster());
    sample_slots_->Backend(slot)->Reset();
    profiling::SetSampleTag(static_cast<int32_t>(Phase::kFork));  // fork() is the fork phase's start
  }
  // A weight profile's random bytes (PostgreSQL's cancel key) belong to the fork phase, as its rules have it.
  if (c_.env->weight) WeightBeforeFork(*c_.env->weight);
  if (c_.pool > 0) {
    const bool handed = HandOff(slot, fd);
    fork_parent_cost_[slot] = SampleThread() - before;
    close(fd);  // the member holds its own copy now
    if (handed) {
      pool_[slot].idle = false;
      pool_[slot].busy = true;
      Taken(slot, record.sequence);
    }
    return;
  }
  if (c_.threads) {
    const bool started = StartThread(slot, fd);
    fork_parent_cost_[slot] = SampleThread() - before;
    if (!started) {
      close(fd);
      return;
    }
    ++live_threads_;
    Taken(slot, record.sequence);
    return;
  }
  const pid_t pid = fork();
  if (pid == 0) BackendChild(slot, fd, sigfd);
  const int fork_error = errno;
  profiling::SetSampleTag(kSampleTagPostmaster);
  fork_parent_cost_[slot] = SampleThread() - before;
  close(fd);
  if (pid < 0) {
    // Out of processes (RLIMIT_NPROC, pid_max) or memory: every later
    // connection would fail the same way.
    Fail(FailedCall::kFork, fork_error);
    return;
  }
  live_[pid] = slot;
  Taken(slot, record.sequence);
}

void Postmaster::Reap() {
  int status;
  rusage usage;
  pid_t pid;
  while ((pid = wait4(-1, &status, WNOHANG, &usage)) != 0) {
    if (pid < 0) {
      if (errno == EINTR) continue;
      // ECHILD: nothing left to wait for (children reaped elsewhere; or
      // backends are threads, whose slots are not these)
      for (const auto& [gone, slot] : live_) Freed(slot);
      live_.clear();
      break;
    }
    auto it = live_.find(pid);
    if (it == live_.end()) continue;
    const size_t slot = it->second;
    live_.erase(it);
    if (c_.pool > 0) {
      // A member ends at the stop (its channel closed), or dies: then its
      // connection, if it had one, is a crashed backend's, and it is
      // replaced while the run goes on.
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
        // It could not build its structures (it said why): a new one
        // would fail the same way.
        Fail(FailedCall::kPoolStart, 0);
      } else if (!stopping_ && (WIFSIGNALED(status) || WEXITSTATUS(status) != 0) && !StoppedBySignal(status)) {
        ReplaceMember(slot);  // a stop signal to the group is the run's end, not a member's death
      }
      continue;
    }
    Message m{};
    m.type = Message::kBackend;
    m.record = slots_[slot];  // the child is gone: its writes are all visible
    CompleteRecord({.pid = pid,
                    .wait_status = status,
                    .usage = &usage,
                    .forked = true,
                    .fork_parent_cost = fork_parent_cost_[slot],
                    .reaped_ns = NowNs()},
                   m.record);
    if (sample_slots_) AppendSamples(m.record.sequence, *sample_slots_->Backend(slot));
    Freed(slot);
    Send(m);
  }
}

void Postmaster::Main() {
  // The tool handles the stop signals and tells us to stop by closing the
  // control pipe, which also happens if the tool dies: either way we drain
  // and clean up. Without this, ^C to the process group would kill us before
  // we removed the socket.
  IgnoreStopSignals();
  signal(SIGPIPE, SIG_IGN);
  // Children must be reapable whatever disposition the tool inherited.
  signal(SIGCHLD, SIG_DFL);
  pid_ = getpid();
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  BACKENDLAB_CHECK(sigfd >= 0);
  void* shared = mmap(nullptr, c_.nslots * sizeof(BackendRecord), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  BACKENDLAB_CHECK(shared != MAP_FAILED);
  slots_ = static_cast<BackendRecord*>(shared);
  slot_used_.assign(c_.nslots, false);
  slot_held_.assign(c_.nslots, false);
  fork_parent_cost_.assign(c_.nslots, {});
  if (c_.threads) {
    int ended[2];
    BACKENDLAB_CHECK(pipe2(ended, O_CLOEXEC | O_NONBLOCK) == 0);
    ended_read_ = ended[0];
    ended_write_ = ended[1];
    threads_ = std::vector<ThreadSlot>(c_.nslots);
    for (size_t i = 0; i < c_.nslots; ++i) {
      threads_[i].postmaster = this;
      threads_[i].slot = i;
    }
    // This process is the server its backends run in: what they malloc
    // comes from its heap (glibc's arenas), as in a forked backend.
    UseDefaultMallocThresholds();
  }
  prctl(PR_SET_NAME, "postmaster");
  if (c_.env->weight) {
    if (absl::Status s = PreparePostmaster(*c_.env->weight); !s.ok()) {
      std::fprintf(stderr, "backendlab postmaster: %s\n", std::string(s.message()).c_str());
      _exit(1);
    }
  }
  if (c_.sampler) StartSampling();
  sigfd_ = sigfd;

  SendBaseline();
  if (c_.pool > 0) {
    void* members = mmap(nullptr, c_.pool * sizeof(MemberShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    BACKENDLAB_CHECK(members != MAP_FAILED);
    members_ = static_cast<MemberShared*>(members);
    pool_.assign(static_cast<size_t>(c_.pool), Member{});
    // Built before serving: the pool's start is no connection's.
    for (size_t i = 0; i < pool_.size() && !failed_; ++i) {
      if (!StartMember(i)) break;
      char c = 0;
      if (ReadAll(pool_[i].channel, &c, 1) != 1 || c != kPoolReady) break;  // it died: reaped below, the run fails
      pool_[i].idle = pool_[i].ready = true;
    }
  }
  // The server's usage is taken from here to the last backend reaped: the
  // bare forks, and the set-up above, are not a connection's.
  serving_start_ = SelfAndChildren();
  std::vector<pollfd> fds;
  while (!stopping_ || Live() > 0) {
    const bool can_accept = !stopping_ && (c_.pool > 0 ? AnyIdle() : Live() < c_.nslots);
    fds.assign({{sigfd, POLLIN, 0}, {c_.control_fd, POLLIN, 0}, {ended_read_, POLLIN, 0}, {can_accept ? c_.listen_fd : -1, POLLIN, 0}});
    for (const Member& m : pool_) fds.push_back({m.channel, POLLIN, 0});
    if (stopping_) fds[1].fd = -1;
    const int n = poll(fds.data(), static_cast<nfds_t>(fds.size()), stopping_ ? 100 : -1);
    if (n < 0 && errno != EINTR) {
      Fail(FailedCall::kPoll, errno);
      KillAndReapAll();
      _exit(1);
    }
    if (n < 0) continue;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      while (read(sigfd, &info, sizeof info) == sizeof info) {
      }
      Reap();
    }
    if (!stopping_ && (fds[1].revents & (POLLIN | POLLHUP))) {
      char c;
      if (read(c_.control_fd, &c, 1) <= 0) {
        StopAccepting();
      } else if (c == kUsageByte) {
        usage_asked_ = true;
      }
    }
    if (fds[2].revents & POLLIN) JoinEnded();
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (fds[4 + i].fd >= 0 && fds[4 + i].fd == pool_[i].channel && (fds[4 + i].revents & (POLLIN | POLLHUP))) MemberSaid(i);
    }
    if (pool_closing_ && !AnyBusy()) ClosePool();
    if (can_accept && !stopping_ && (fds[3].revents & POLLIN)) Accept(sigfd);
    if (stopping_ && NowNs() > stop_deadline_) {
      ClosePool();
      for (const auto& [pid, slot] : live_) kill(pid, SIGKILL);
      // A thread cannot be killed alone: its connection is shut down, and
      // its backend ends as on the client's EOF.
      for (size_t i = 0; i < threads_.size(); ++i) {
        if (slot_used_[i]) shutdown(threads_[i].client_fd, SHUT_RDWR);
      }
      stop_deadline_ = INT64_MAX;
    }
    Reap();
    if (usage_asked_ && Serving() == held_live_) SendUsage();
  }
  SendUsage();  // without held connections: now, the last backend reaped
  if (sample_slots_) {  // before the closing bare forks: they are not the run
    profiling::Sampler::Stop();
    AppendSamples(-1, *sample_slots_->Postmaster());
  }
  if (samples_lost_ > 0) {
    Message m{};
    m.type = Message::kSamplesLost;
    m.value = samples_lost_;
    Send(m);
  }
  if (!failed_) SendBaseline();
  if (results_fd_ >= 0) close(results_fd_);
  RemoveFiles();
  _exit(failed_ ? 1 : 0);
}

bool Postmaster::StartThread(size_t slot, int client_fd) {
  ThreadSlot& t = threads_[slot];
  t.client_fd = client_fd;
  t.tid = 0;
  t.exit_code = 0;
  if (c_.reuse_memory) {
    if (free_arenas_.empty()) {
      t.arena = std::make_unique<PageArena>();
    } else {
      t.arena = std::move(free_arenas_.back());
      free_arenas_.pop_back();
    }
  }
  const int error = pthread_create(&t.thread, nullptr, &ThreadMain, &t);
  if (error != 0) {
    // Out of threads (RLIMIT_NPROC, threads-max) or memory for a stack:
    // every later connection would fail the same way.
    Fail(FailedCall::kThread, error);
    return false;
  }
  return true;
}

// A backend thread: the postmaster's signal mask (SIGCHLD blocked, stop
// signals ignored by the process), its own slot's arena, its connection
// closed at its end, and its slot number to the postmaster.
void* Postmaster::ThreadMain(void* arg) {
  ThreadSlot& t = *static_cast<ThreadSlot*>(arg);
  Postmaster& pm = *t.postmaster;
  t.tid = static_cast<int32_t>(gettid());
  pthread_setname_np(pthread_self(), "backend");
  absl::Status status;
  {
    ScopedPageArena arena(t.arena.get());
    status = RunBackend(*pm.c_.env, t.client_fd, pm.slots_[t.slot]);
  }
  if (!status.ok()) std::fprintf(stderr, "backendlab backend thread %d: %s\n", t.tid, std::string(status.message()).c_str());
  t.exit_code = status.ok() ? 0 : 3;
  close(t.client_fd);
  t.end = SampleThread();
  const uint64_t slot = t.slot;
  BACKENDLAB_CHECK(WriteAll(pm.ended_write_, &slot, sizeof slot));
  return nullptr;
}

// Joins every thread that said it ended, completes its record and sends it.
void Postmaster::JoinEnded() {
  uint64_t slot;
  while (read(ended_read_, &slot, sizeof slot) == sizeof slot) {
    ThreadSlot& t = threads_[slot];
    const ResourceSample before = SampleThread();
    BACKENDLAB_CHECK(pthread_join(t.thread, nullptr) == 0);
    const ResourceSample joined = SampleThread();
    --live_threads_;
    Freed(slot);
    if (t.arena) free_arenas_.push_back(std::move(t.arena));
    Message m{};
    m.type = Message::kBackend;
    m.record = slots_[slot];
    CompleteRecord({.pid = t.tid,
                    .wait_status = t.exit_code << 8,
                    .usage = nullptr,
                    .forked = true,
                    .fork_parent_cost = fork_parent_cost_[slot],
                    .reaped_ns = joined.wall_ns,
                    .thread_end = &t.end,
                    .join_cost = joined - before},
                   m.record);
    Send(m);
  }
}

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
    _exit(3);
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
    close(pool_[i].channel);
    pool_[i].channel = -1;
    pool_[i].idle = false;
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
                  .wait_status = c == kPoolDone ? 0 : 3 << 8,
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

void Postmaster::ReplaceMember(size_t i) {
  Message m{};
  m.type = Message::kReplaced;
  m.value = pool_[i].pid;
  if (StartMember(i)) Send(m);  // ready when it says so (MemberSaid)
}

void Postmaster::ClosePool() {
  if (pool_.empty()) return;
  SendUsage();
  for (Member& m : pool_) {
    if (m.channel >= 0) close(m.channel);
    m.channel = -1;
    m.idle = m.busy = false;
  }
  pool_closing_ = false;
}

// Appends a process's samples to the run's sample file. After a failed
// write (a full disk) the file is cut back to its last whole chunk and no
// more is written: the tool gets every sample before, and the count lost.
void Postmaster::AppendSamples(int64_t sequence, const profiling::SampleBuffer& buffer) {
  if (c_.samples_fd < 0) return;
  if (samples_lost_ > 0) {
    samples_lost_ += buffer.size();
    return;
  }
  if (!AppendSampleChunk(c_.samples_fd, sequence, buffer)) {
    std::fprintf(stderr, "backendlab postmaster: writing samples: %s; no more samples are kept\n", std::strerror(errno));
    samples_lost_ += std::max<uint32_t>(1, buffer.size());
  }
}

// The postmaster samples itself from here on; each backend re-arms the
// timer for itself (BackendChild). A sampler that cannot start fails the
// run: a profile with holes would mislead.
void Postmaster::StartSampling() {
  absl::StatusOr<SampleSlots> created = SampleSlots::Create(c_.nslots);
  absl::Status s = created.status();
  if (s.ok()) {
    sample_slots_.emplace(*std::move(created));
    profiling::SetSampleTag(kSampleTagPostmaster);
    s = profiling::Sampler::Start(*c_.sampler, sample_slots_->Postmaster());
    profiling::Sampler::SetBuffer(nullptr);  // until the first measured backend (Accept)
  }
  if (!s.ok()) {
    std::fprintf(stderr, "backendlab postmaster: cannot sample: %s\n", std::string(s.message()).c_str());
    RemoveFiles();
    _exit(1);
  }
}

void Postmaster::KillAndReapAll() {
  for (const auto& [pid, slot] : live_) kill(pid, SIGKILL);
  while (!live_.empty()) {
    int status;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    live_.erase(pid);
  }
  RemoveFiles();
}

}  // namespace

void RunPostmaster(const PostmasterConfig& config) {
  Postmaster postmaster(config);
  postmaster.Main();
}

int64_t BareFork() {
  const int64_t t0 = NowNs();
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid < 0) return -1;
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return NowNs() - t0;
}

}  // namespace backendlab::lifecycle::internal
