// The postmaster process: poll over the listening socket, a signalfd for
// SIGCHLD, the control pipe and (threads) a pipe of ended threads; accept,
// fork or start a thread, reap or join, report.
#include "lifecycle/internal/postmaster.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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
#include "lifecycle/internal/postmaster_state.h"
#include "lifecycle/internal/weight_work.h"

namespace backendlab::lifecycle::internal {


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
  _exit(status.ok() ? 0 : kBackendErrorExit);
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
  // Reaping by pidfd: its pidfd is part of starting the backend.
  const int watch_error = pid > 0 && reap_pidfd_ ? WatchChild(pid, slot) : 0;
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
  if (watch_error != 0) {
    // Out of descriptors, or no pidfd_open (Linux < 5.3): the backends are
    // reaped by waitpid(-1) from here on, and the run fails.
    reap_pidfd_ = false;
    Fail(FailedCall::kPidfd, watch_error);
  }
}

int Postmaster::WatchChild(pid_t pid, size_t slot) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return errno;
  epoll_event ev{};
  ev.events = EPOLLIN;  // readable once the process has exited
  ev.data.u64 = static_cast<uint64_t>(pid);
  if (epoll_ctl(reap_epoll_, EPOLL_CTL_ADD, pidfd, &ev) != 0) {
    const int error = errno;
    close(pidfd);
    return error;
  }
  pidfds_[slot] = pidfd;
  return 0;
}

void Postmaster::Reap() {
  if (reap_pidfd_) {
    ReapByPidfd();
    return;
  }
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
    Reaped(pid, status, usage);
  }
}

// Each backend whose pidfd is readable has exited: wait4 on its pid alone.
void Postmaster::ReapByPidfd() {
  epoll_event exited[64];
  int n;
  do {
    n = epoll_wait(reap_epoll_, exited, static_cast<int>(std::size(exited)), 0);
    for (int i = 0; i < n; ++i) {
      const pid_t pid = static_cast<pid_t>(exited[i].data.u64);
      int status;
      rusage usage;
      pid_t got;
      while ((got = wait4(pid, &status, WNOHANG, &usage)) < 0 && errno == EINTR) {
      }
      if (got == pid) Reaped(pid, status, usage);
    }
  } while (n == static_cast<int>(std::size(exited)));
}

void Postmaster::Reaped(pid_t pid, int status, const rusage& usage) {
  auto it = live_.find(pid);
  if (it == live_.end()) return;
  const size_t slot = it->second;
  live_.erase(it);
  if (!pidfds_.empty() && pidfds_[slot] >= 0) {
    close(pidfds_[slot]);  // and out of the epoll set with it
    pidfds_[slot] = -1;
  }
  if (c_.pool > 0) {
    MemberEnded(slot, pid, status);
    return;
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

void Postmaster::ControlSaid() {
  char c;
  if (read(c_.control_fd, &c, 1) <= 0) {
    StopAccepting();
  } else if (c == kUsageByte) {
    usage_asked_ = true;
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
  if (c_.reap_pidfd) {
    reap_epoll_ = epoll_create1(EPOLL_CLOEXEC);
    BACKENDLAB_CHECK(reap_epoll_ >= 0);
    pidfds_.assign(c_.nslots, -1);
    reap_pidfd_ = true;
  }

  SendBaseline();
  if (c_.pool > 0) {
    const Message::Usage before_pool = ProcessAndReaped();
    before_pool_cpu_ns_ = before_pool.user_ns + before_pool.system_ns;
    void* members = mmap(nullptr, c_.pool * sizeof(MemberShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    BACKENDLAB_CHECK(members != MAP_FAILED);
    members_ = static_cast<MemberShared*>(members);
    pool_.assign(static_cast<size_t>(c_.pool), Member{});
    // Built before serving: the pool's start is no connection's. A stop
    // (the control pipe's EOF: the tool was stopped, or died) is looked
    // for between forks, as the loop below looks between connections, so
    // that no member is forked after it.
    for (size_t i = 0; i < pool_.size() && !failed_ && !stopping_; ++i) {
      if (!StartMember(i) || !AwaitReady(i)) break;  // it died (reaped below, the run fails), stopped, or a stop came
      pool_[i].idle = pool_[i].ready = true;
      pollfd control = {c_.control_fd, POLLIN, 0};
      if (poll(&control, 1, 0) > 0) ControlSaid();
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
    // While a member serves a connection, CheckStoppedMembers looks every second.
    const int n = poll(fds.data(), static_cast<nfds_t>(fds.size()), stopping_ ? 100 : AnyBusy() ? 1000 : -1);
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
    if (!stopping_ && (fds[1].revents & (POLLIN | POLLHUP))) ControlSaid();
    if (fds[2].revents & POLLIN) JoinEnded();
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (fds[4 + i].fd >= 0 && fds[4 + i].fd == pool_[i].channel && (fds[4 + i].revents & (POLLIN | POLLHUP))) MemberSaid(i);
    }
    if (pool_closing_ && !AnyBusy()) ClosePool();
    if (!pool_.empty()) CheckStoppedMembers();
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
  SendPoolOutside();  // every member reaped, before the closing bare forks
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
