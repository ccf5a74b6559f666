// The postmaster process: poll over the listening socket, a signalfd for
// SIGCHLD, the control pipe and its process model's descriptors (backends.h);
// accept, hand the connection to the model, report.
#include "lifecycle/internal/postmaster.h"

#include <fcntl.h>
#include <poll.h>
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
#include <memory>
#include <vector>

#include "base/check.h"
#include "base/fresh_allocations.h"
#include "base/interrupt.h"
#include "base/resource_usage.h"
#include "lifecycle/internal/io.h"
#include "lifecycle/internal/protocol.h"
#include "lifecycle/internal/sample_slots.h"
#include "lifecycle/internal/postmaster_state.h"
#include "lifecycle/internal/weight_work.h"

namespace backendlab::lifecycle::internal {


void Postmaster::SetUpChild() {
  close(c_.listen_fd);
  close(c_.control_fd);
  if (results_fd_ >= 0) close(results_fd_);
  if (c_.samples_fd >= 0) close(c_.samples_fd);
  close(sigfd_);
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
}

void Postmaster::Accept() {
  const int fd = accept4(c_.listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    // The client gave up (ECONNABORTED), or no connection after all: try
    // again on the next turn. Anything else (EMFILE, ENOMEM, ...) would
    // fail the same way forever.
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) Fail(FailedCall::kAccept, errno);
    return;
  }
  const int64_t accepted = NowNs();
  const size_t slot = backends_->FreeSlot();  // Accept is only polled for when there is one
  BackendRecord& record = slots_[slot];
  record = BackendRecord{};
  record.sequence = next_sequence_++;
  record.accept_ns = accepted;
  const int64_t sequence = record.sequence;
  // The client learns its connection's sequence number first, so that it
  // tells warm-up connections from measured ones by the same rule. A client
  // already gone makes this fail; its backend then finds it gone too.
  (void)WriteAll(fd, &record.sequence, sizeof record.sequence);
  const ResourceSample before = SampleThread();
  if (sample_slots_) {
    // The postmaster's own samples count from the first measured backend's
    // fork on, like every other figure; a backend's slot is emptied for it.
    if (sequence == c_.warmup) profiling::Sampler::SetBuffer(sample_slots_->Postmaster());
    sample_slots_->Backend(slot)->Reset();
    profiling::SetSampleTag(static_cast<int32_t>(Phase::kFork));  // fork() is the fork phase's start
  }
  // A weight profile's random bytes (PostgreSQL's cancel key) belong to the fork phase, as its rules have it.
  if (c_.env->weight) WeightBeforeFork(*c_.env->weight);
  if (backends_->Start(slot, fd, before)) Taken(slot, sequence);
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
  sigfd_ = sigfd;
  void* shared = mmap(nullptr, c_.nslots * sizeof(BackendRecord), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  BACKENDLAB_CHECK(shared != MAP_FAILED);
  slots_ = static_cast<BackendRecord*>(shared);
  slot_used_.assign(c_.nslots, false);
  slot_held_.assign(c_.nslots, false);
  fork_parent_cost_.assign(c_.nslots, {});
  backends_ = MakeBackends(*this);
  prctl(PR_SET_NAME, "postmaster");
  if (c_.env->weight) {
    if (absl::Status s = PreparePostmaster(*c_.env->weight); !s.ok()) {
      std::fprintf(stderr, "backendlab postmaster: %s\n", std::string(s.message()).c_str());
      _exit(1);
    }
  }
  if (c_.sampler) StartSampling();
  SendBaseline();
  backends_->Build();
  // The server's usage is taken from here to the last backend reaped: the
  // bare forks, and the set-up above, are not a connection's.
  serving_start_ = SelfAndChildren();
  // The loop's own descriptors; the process model's follow them.
  constexpr size_t kLoopFds = 3;
  std::vector<pollfd> fds;
  while (!stopping_ || backends_->Live() > 0) {
    const bool can_accept = !stopping_ && backends_->CanAccept();
    fds.assign({{sigfd, POLLIN, 0}, {c_.control_fd, POLLIN, 0}, {can_accept ? c_.listen_fd : -1, POLLIN, 0}});
    backends_->AddPollFds(fds);
    if (stopping_) fds[1].fd = -1;
    const int n = poll(fds.data(), static_cast<nfds_t>(fds.size()), stopping_ ? 100 : backends_->PollTimeoutMs());
    if (n < 0 && errno != EINTR) {
      Fail(FailedCall::kPoll, errno);
      backends_->KillAll();
      RemoveFiles();
      _exit(1);
    }
    if (n < 0) continue;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      while (read(sigfd, &info, sizeof info) == sizeof info) {
      }
      backends_->Reap();
    }
    if (!stopping_ && (fds[1].revents & (POLLIN | POLLHUP))) ControlSaid();
    backends_->Polled(fds.data() + kLoopFds);
    if (can_accept && !stopping_ && (fds[2].revents & POLLIN)) Accept();
    if (stopping_ && NowNs() > stop_deadline_) {
      backends_->EndAll();
      stop_deadline_ = INT64_MAX;
    }
    backends_->Reap();
    if (usage_asked_ && backends_->Serving() == held_live_) SendUsage();
  }
  SendUsage();  // without held connections: now, the last backend reaped
  if (sample_slots_) {  // before the closing bare forks: they are not the run
    profiling::Sampler::Stop();
    AppendSamples(-1, *sample_slots_->Postmaster());
  }
  backends_->Finish();  // every backend gone, before the closing bare forks
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

std::unique_ptr<Backends> MakeBackends(Postmaster& pm) {
  if (pm.config().threads) return MakeThreadBackends(pm);
  if (pm.config().pool > 0) return MakePooledBackends(pm);
  return MakeForkedBackends(pm);
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
