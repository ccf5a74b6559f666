// The mock postmaster, its backends, and the clients that connect to it.
#include "lifecycle/cycle.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/fresh_allocations.h"
#include "base/names.h"
#include "lifecycle/internal/io.h"
#include "lifecycle/internal/sample_slots.h"
#include "base/resource_usage.h"
#include "profiling/perf_events.h"
#include "profiling/sampler.h"
#include "profiling/syscall_counter.h"

namespace backendlab::lifecycle {
namespace {

constexpr Mode kAllModes[] = {Mode::kFork, Mode::kInproc};

// Messages from the postmaster to the tool, one write() each (< PIPE_BUF, so
// never interleaved or torn).
struct Message {
  enum Type : int32_t { kBackend = 1, kBaselineFork = 2, kSamplesLost = 3 } type;
  int32_t unused = 0;
  int64_t value = 0;  // kBaselineFork: ns of one bare fork+exit+wait; kSamplesLost: how many
  BackendRecord record;
};
static_assert(sizeof(Message) <= PIPE_BUF, "a message must be written atomically");

// How long the postmaster waits for its backends after being told to stop
// before it SIGKILLs them: a backend whose client is gone exits at once.
constexpr int64_t kStopGraceNs = 5'000'000'000;

volatile sig_atomic_t g_interrupted = 0;
void OnSigint(int) { g_interrupted = 1; }

absl::Status Errno(std::string_view what) {
  return absl::UnavailableError(absl::StrCat(std::string(what), ": ", std::strerror(errno)));
}

using internal::WriteAll;

// A one-byte message on a socket whose peer may be gone: an error, never SIGPIPE.
bool SendByte(int fd, char byte) {
  for (;;) {
    const ssize_t n = send(fd, &byte, 1, MSG_NOSIGNAL);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

int64_t TimevalNs(const timeval& tv) { return int64_t{tv.tv_sec} * 1'000'000'000 + int64_t{tv.tv_usec} * 1000; }

// One bare fork + _exit + waitpid: the floor every backend starts from.
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

// ---- the postmaster process ---------------------------------------------

struct Postmaster {
  const BackendEnvironment* env = nullptr;
  int listen_fd = -1;
  int control_fd = -1;  // EOF: stop
  int results_fd = -1;
  int samples_fd = -1;  // with a sampler: where reaped backends' samples go
  int baseline_forks = 0;
  int64_t warmup = 0;  // backends before this sequence number are warm-up
  std::optional<profiling::SamplerOptions> sampler;
  std::optional<internal::SampleSlots> sample_slots;
  int64_t samples_lost = 0;  // after a failed write to samples_fd
  std::string socket_path, dir;

  BackendRecord* slots = nullptr;  // shared with the backends
  size_t nslots = 0;
  std::vector<bool> slot_used;
  std::vector<ResourceSample> fork_parent_cost;  // per slot
  std::map<pid_t, size_t> live;                             // pid -> slot
  int64_t next_sequence = 0;
  pid_t postmaster_pid = 0;

  // A tool that is gone reads nothing more: stop sending, keep reaping and
  // cleaning up (SIGPIPE is ignored in Main).
  void Send(const Message& m) {
    if (results_fd >= 0 && !WriteAll(results_fd, &m, sizeof m)) {
      close(results_fd);
      results_fd = -1;
    }
  }

  void SendBaseline() {
    for (int i = 0; i < baseline_forks; ++i) {
      Message m{};
      m.type = Message::kBaselineFork;
      m.value = BareFork();
      if (m.value >= 0) Send(m);
    }
  }

  [[noreturn]] void BackendChild(size_t slot, int client_fd, int sigfd) {
    BackendRecord& record = slots[slot];
    // Timers are not inherited: arm this backend's before anything else, so
    // its start-up is sampled too (tagged `fork`, as the postmaster left it).
    if (sample_slots) {
      if (absl::Status s = profiling::Sampler::RestartAfterFork(sample_slots->Backend(slot)); !s.ok()) {
        std::fprintf(stderr, "backendlab backend %d: not sampled: %s\n", getpid(), std::string(s.message()).c_str());
      }
    }
    prctl(PR_SET_NAME, "backend");  // the name perf's samples carry
    close(listen_fd);
    close(control_fd);
    close(results_fd);
    if (samples_fd >= 0) close(samples_fd);
    close(sigfd);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the postmaster
    if (getppid() != postmaster_pid) _exit(1);  // it died before prctl took effect
    UseDefaultMallocThresholds();
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    const absl::Status status = RunBackend(*env, client_fd, record);
    if (!status.ok()) std::fprintf(stderr, "backendlab backend %d: %s\n", getpid(), std::string(status.message()).c_str());
    const ResourceSample end = SampleSelf();
    record.exit_cpu_ns = end.cpu_ns;
    record.exit_minor_faults = end.minor_faults;
    record.exit_major_faults = end.major_faults;
    record.exit_ns = NowNs();
    _exit(status.ok() ? 0 : 3);
  }

  void Accept(int sigfd) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;  // the client gave up; nothing to do
    const int64_t accepted = NowNs();
    size_t slot = 0;
    while (slot_used[slot]) ++slot;  // Accept is only polled for when one is free
    BackendRecord& record = slots[slot];
    record = BackendRecord{};
    record.sequence = next_sequence++;
    record.accept_ns = accepted;
    const ResourceSample before = SampleSelf();
    postmaster_pid = getpid();
    if (sample_slots) {
      // The postmaster's own samples count from the first measured backend's
      // fork on, like every other figure; a backend's slot is emptied for it.
      if (record.sequence == warmup) profiling::Sampler::SetBuffer(sample_slots->Postmaster());
      sample_slots->Backend(slot)->Reset();
      profiling::SetSampleTag(static_cast<int32_t>(Phase::kFork));  // fork() is the fork phase's start
    }
    const pid_t pid = fork();
    if (pid == 0) BackendChild(slot, fd, sigfd);
    profiling::SetSampleTag(kSampleTagPostmaster);
    fork_parent_cost[slot] = SampleSelf() - before;
    close(fd);
    if (pid < 0) {
      std::fprintf(stderr, "backendlab postmaster: fork: %s\n", std::strerror(errno));
      return;  // the client sees EOF: a failed connection
    }
    slot_used[slot] = true;
    live[pid] = slot;
  }

  void Reap() {
    int status;
    rusage usage;
    pid_t pid;
    while ((pid = wait4(-1, &status, WNOHANG, &usage)) != 0) {
      if (pid < 0) {
        if (errno == EINTR) continue;
        live.clear();  // ECHILD: nothing left to wait for (children reaped elsewhere)
        break;
      }
      auto it = live.find(pid);
      if (it == live.end()) continue;
      const size_t slot = it->second;
      live.erase(it);
      Message m{};
      m.type = Message::kBackend;
      m.record = slots[slot];  // the child is gone: its writes are all visible
      BackendRecord& r = m.record;
      r.pid = pid;
      r.reaped_ns = NowNs();
      if (WIFSIGNALED(status)) {
        r.outcome = BackendOutcome::kCrashed;
        r.signal = WTERMSIG(status);
      } else {
        r.exit_status = WEXITSTATUS(status);
        r.outcome = r.exit_status == 0 ? BackendOutcome::kExited : BackendOutcome::kCrashed;
      }
      if (r.child_start_ns != 0) {
        PhaseCounters& f = r.phase[static_cast<int>(Phase::kFork)];
        f.wall_ns = r.child_start_ns - r.accept_ns;
        f.cpu_ns += fork_parent_cost[slot].cpu_ns;
        f.minor_faults += fork_parent_cost[slot].minor_faults;
        f.major_faults += fork_parent_cost[slot].major_faults;
        r.phases_done |= 1u << static_cast<int>(Phase::kFork);
      }
      if (r.exit_ns != 0) {
        PhaseCounters& p = r.phase[static_cast<int>(Phase::kReap)];
        p.wall_ns = r.reaped_ns - r.exit_ns;
        // The kernel's teardown of the process is charged to the child: its
        // totals at reap minus what it had used when it called _exit.
        p.cpu_ns = std::max<int64_t>(0, TimevalNs(usage.ru_utime) + TimevalNs(usage.ru_stime) - r.exit_cpu_ns);
        p.minor_faults = std::max<int64_t>(0, usage.ru_minflt - r.exit_minor_faults);
        p.major_faults = std::max<int64_t>(0, usage.ru_majflt - r.exit_major_faults);
        r.phases_done |= 1u << static_cast<int>(Phase::kReap);
      }
      if (sample_slots) AppendSamples(r.sequence, *sample_slots->Backend(slot));
      slot_used[slot] = false;
      Send(m);
    }
  }

  [[noreturn]] void Main() {
    // The tool handles ^C and tells us to stop by closing the control pipe,
    // which also happens if the tool dies: either way we drain and clean up.
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    // Children must be reapable whatever disposition the tool inherited.
    signal(SIGCHLD, SIG_DFL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, nullptr);
    const int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    BACKENDLAB_CHECK(sigfd >= 0);
    void* shared = mmap(nullptr, nslots * sizeof(BackendRecord), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    BACKENDLAB_CHECK(shared != MAP_FAILED);
    slots = static_cast<BackendRecord*>(shared);
    slot_used.assign(nslots, false);
    fork_parent_cost.assign(nslots, {});
    prctl(PR_SET_NAME, "postmaster");
    if (sampler) StartSampling();

    SendBaseline();
    bool stopping = false;
    int64_t stop_deadline = 0;
    while (!stopping || !live.empty()) {
      const bool can_accept = !stopping && live.size() < nslots;
      pollfd fds[3] = {{sigfd, POLLIN, 0}, {control_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}};
      const int nfds = can_accept ? 3 : 2;
      if (stopping) fds[1].fd = -1;
      const int n = poll(fds, static_cast<nfds_t>(nfds), stopping ? 100 : -1);
      if (n < 0 && errno != EINTR) {
        std::fprintf(stderr, "backendlab postmaster: poll: %s\n", std::strerror(errno));
        KillAndReapAll();
        _exit(1);
      }
      if (fds[0].revents & POLLIN) {
        signalfd_siginfo info;
        while (read(sigfd, &info, sizeof info) == sizeof info) {
        }
        Reap();
      }
      if (!stopping && (fds[1].revents & (POLLIN | POLLHUP))) {
        char c;
        if (read(control_fd, &c, 1) <= 0) {
          stopping = true;
          stop_deadline = NowNs() + kStopGraceNs;
          close(listen_fd);  // no new connections from now on
          unlink(socket_path.c_str());
        }
      }
      if (can_accept && !stopping && (fds[2].revents & POLLIN)) Accept(sigfd);
      if (stopping && NowNs() > stop_deadline) {
        for (const auto& [pid, slot] : live) kill(pid, SIGKILL);
        stop_deadline = INT64_MAX;
      }
      Reap();
    }
    if (sample_slots) {  // before the closing bare forks: they are not the run
      profiling::Sampler::Stop();
      AppendSamples(-1, *sample_slots->Postmaster());
    }
    if (samples_lost > 0) {
      Message m{};
      m.type = Message::kSamplesLost;
      m.value = samples_lost;
      Send(m);
    }
    SendBaseline();
    if (results_fd >= 0) close(results_fd);
    unlink(socket_path.c_str());
    rmdir(dir.c_str());
    _exit(0);
  }

  // Appends a process's samples to the run's sample file. After a failed
  // write (a full disk) the file is cut back to its last whole chunk and no
  // more is written: the tool gets every sample before, and the count lost.
  void AppendSamples(int64_t sequence, const profiling::SampleBuffer& buffer) {
    if (samples_fd < 0) return;
    if (samples_lost > 0) {
      samples_lost += buffer.size();
      return;
    }
    if (!internal::AppendSampleChunk(samples_fd, sequence, buffer)) {
      std::fprintf(stderr, "backendlab postmaster: writing samples: %s; no more samples are kept\n", std::strerror(errno));
      samples_lost += std::max<uint32_t>(1, buffer.size());
    }
  }

  // The postmaster samples itself from here on; each backend re-arms the
  // timer for itself (BackendChild). A sampler that cannot start fails the
  // run: a profile with holes would mislead.
  void StartSampling() {
    absl::StatusOr<internal::SampleSlots> created = internal::SampleSlots::Create(nslots);
    absl::Status s = created.status();
    if (s.ok()) {
      sample_slots.emplace(*std::move(created));
      profiling::SetSampleTag(kSampleTagPostmaster);
      s = profiling::Sampler::Start(*sampler, sample_slots->Postmaster());
      profiling::Sampler::SetBuffer(nullptr);  // until the first measured backend (Accept)
    }
    if (!s.ok()) {
      std::fprintf(stderr, "backendlab postmaster: cannot sample: %s\n", std::string(s.message()).c_str());
      unlink(socket_path.c_str());
      rmdir(dir.c_str());
      _exit(1);
    }
  }

  void KillAndReapAll() {
    for (const auto& [pid, slot] : live) kill(pid, SIGKILL);
    while (!live.empty()) {
      int status;
      const pid_t pid = waitpid(-1, &status, 0);
      if (pid < 0 && errno == EINTR) continue;
      if (pid < 0) break;
      live.erase(pid);
    }
    unlink(socket_path.c_str());
    rmdir(dir.c_str());
  }
};

// ---- the clients ------------------------------------------------------------

struct Client {
  int fd = -1;
  int64_t started_ns = 0;
  bool ready = false;
};

class ClientLoop {
 public:
  ClientLoop(const CycleOptions& options, const std::string& socket_path, int results_fd, CycleResult& result)
      : options_(options), socket_path_(socket_path), results_fd_(results_fd), result_(result) {}

  // Runs until the measured connections are done, the duration is over, or ^C.
  void Run() {
    std::vector<Client> clients(static_cast<size_t>(options_.clients));
    if (options_.warmup == 0) {
      measuring_ = true;
      measure_start_ns_ = NowNs();
    }
    const int64_t total = options_.connections > 0 ? options_.warmup + options_.connections : INT64_MAX;
    int64_t started = 0;
    int64_t last_progress = 0;
    for (;;) {
      if (g_interrupted) {
        result_.interrupted = true;
        break;
      }
      const int64_t now = NowNs();
      const bool time_up = options_.connections == 0 && measuring_ && now - measure_start_ns_ >= options_.duration_ms * 1'000'000;
      const bool done_starting = started >= total || time_up;
      // Start a connection on every idle client.
      for (Client& c : clients) {
        if (c.fd < 0 && !done_starting && started < total) {
          if (Connect(c)) ++started;
        }
      }
      bool any_busy = false;
      std::vector<pollfd> fds;
      for (Client& c : clients) {
        any_busy |= c.fd >= 0;
        fds.push_back({c.fd, POLLIN, 0});
      }
      if (!any_busy && (done_starting || started >= total)) break;
      fds.push_back({results_fd_, POLLIN, 0});
      const int n = poll(fds.data(), fds.size(), 100);
      if (n < 0) continue;  // EINTR: ^C is checked at the top
      for (size_t i = 0; i < clients.size(); ++i) {
        if (clients[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) Complete(clients[i]);
      }
      if ((fds.back().revents & POLLIN) && !DrainOne()) {
        result_.postmaster_gone = true;  // EOF before we asked it to stop
        break;
      }
      if (fds.back().revents & (POLLHUP | POLLERR) && !(fds.back().revents & POLLIN)) {
        result_.postmaster_gone = true;
        break;
      }
      if (options_.progress && now - last_progress > 200'000'000) {
        last_progress = now;
        options_.progress(absl::StrCat("cycle: ", completed_, " connections", measuring_ ? "" : " (warm-up)"));
      }
    }
    if (measuring_) result_.wall_ns = last_complete_ns_ - measure_start_ns_;
    for (Client& c : clients) {
      if (c.fd >= 0) close(c.fd);
      c.fd = -1;
    }
  }

  // Reads one message from the postmaster; false at EOF.
  bool DrainOne() {
    Message m;
    if (internal::ReadAll(results_fd_, &m, sizeof m) != static_cast<ssize_t>(sizeof m)) return false;
    if (m.type == Message::kBaselineFork) {
      result_.baseline_fork_ns.push_back(m.value);
    } else if (m.type == Message::kSamplesLost) {
      result_.samples_dropped += m.value;
    } else if (m.record.sequence >= options_.warmup) {
      result_.records.push_back(m.record);
    } else if (m.record.outcome != BackendOutcome::kExited) {
      result_.warmup_records_failed.push_back(m.record);  // never dropped silently
    }
    return true;
  }

 private:
  bool Connect(Client& c) {
    c.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c.fd < 0) return false;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path_.c_str());
    c.started_ns = NowNs();
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(c.fd);
      c.fd = -1;
      return false;  // backlog full or interrupted: retried on the next turn
    }
    c.ready = false;
    return true;
  }

  void Complete(Client& c) {
    char byte = 0;
    const ssize_t n = read(c.fd, &byte, 1);
    if (n < 0 && errno == EINTR) return;
    const int64_t now = NowNs();
    const bool ok = n == 1 && byte == kReadyByte;
    if (ok) (void)SendByte(c.fd, kTerminateByte);
    close(c.fd);
    c.fd = -1;
    ++completed_;
    if (!measuring_ && completed_ >= options_.warmup) {
      measuring_ = true;
      measure_start_ns_ = now;
      return;  // the last warm-up connection
    }
    if (!measuring_) return;
    last_complete_ns_ = now;
    if (ok) {
      ++result_.connections;
      result_.connect_latency_ns.push_back(now - c.started_ns);
    } else {
      ++result_.failed_connections;
    }
  }

  const CycleOptions& options_;
  const std::string& socket_path_;
  int results_fd_;
  CycleResult& result_;
  int64_t completed_ = 0;
  bool measuring_ = false;
  int64_t measure_start_ns_ = 0;
  int64_t last_complete_ns_ = 0;
};

// SIGINT stops the run cleanly while RunCycle is active; the previous handler
// comes back when it returns.
class SigintScope {
 public:
  SigintScope() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = OnSigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);  // no SA_RESTART: poll returns EINTR
  }
  ~SigintScope() { sigaction(SIGINT, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

// The tool profiling itself while it runs backends in-process: one buffer,
// the sampler stopped before the result is read.
class InprocSampling {
 public:
  static constexpr uint32_t kCapacity = 1 << 17;  // over two minutes of CPU at 1 kHz

  explicit InprocSampling(const std::optional<profiling::SamplerOptions>& options) : options_(options) {}
  InprocSampling(const InprocSampling&) = delete;
  InprocSampling& operator=(const InprocSampling&) = delete;
  ~InprocSampling() {
    if (started_) profiling::Sampler::Stop();
  }

  absl::Status Start() {
    if (!options_) return absl::OkStatus();
    absl::StatusOr<profiling::MappedSampleBuffer> buffer = profiling::MappedSampleBuffer::Create(kCapacity);
    if (!buffer.ok()) return buffer.status();
    buffer_.emplace(*std::move(buffer));
    profiling::SetSampleTag(kSampleTagClient);
    absl::Status s = profiling::Sampler::Start(*options_, buffer_->get());
    started_ = s.ok();
    return s;
  }

  void Finish(CycleResult& result) {
    if (!started_) return;
    profiling::Sampler::Stop();
    started_ = false;
    const profiling::SampleBuffer& b = *buffer_->get();
    result.samples = profiling::CopySamples(b);
    result.samples_dropped = static_cast<int64_t>(b.dropped.load());
    result.samples_truncated = static_cast<int64_t>(b.truncated.load());
  }

 private:
  const std::optional<profiling::SamplerOptions>& options_;
  std::optional<profiling::MappedSampleBuffer> buffer_;  // unmapped after the destructor's Stop
  bool started_ = false;
};

absl::StatusOr<CycleResult> RunInproc(const CycleOptions& options, const BackendEnvironment& env) {
  CycleResult result;
  result.syscalls = options.backend.count_syscalls ? profiling::SyscallCounter::Availability()
                                                   : absl::UnavailableError("syscall counts off (--syscalls=off)");
  auto baseline = [&] {
    for (int i = 0; i < options.baseline_forks; ++i) {
      if (const int64_t ns = BareFork(); ns >= 0) result.baseline_fork_ns.push_back(ns);
    }
  };
  baseline();
  InprocSampling sampling(options.sampler);
  int64_t start = 0;
  const int64_t total = options.warmup + options.connections;
  for (int64_t seq = 0; options.connections == 0 || seq < total; ++seq) {
    if (g_interrupted) {
      result.interrupted = true;
      break;
    }
    if (seq == options.warmup) {
      if (absl::Status s = sampling.Start(); !s.ok()) return s;
      start = NowNs();
    }
    if (options.connections == 0 && seq > options.warmup && NowNs() - start >= options.duration_ms * 1'000'000) break;
    BackendRecord record;
    record.sequence = seq;
    record.accept_ns = record.child_start_ns = NowNs();
    if (absl::Status s = RunBackend(env, -1, record); !s.ok()) return s;
    profiling::SetSampleTag(kSampleTagClient);
    record.exit_ns = record.reaped_ns = NowNs();
    record.outcome = BackendOutcome::kExited;
    if (seq >= options.warmup) {
      result.records.push_back(record);
      result.connect_latency_ns.push_back(record.ready_ns - record.accept_ns);
      ++result.connections;
    }
    if (options.progress && seq % 100 == 0) options.progress(absl::StrCat("cycle: ", seq, " backends (inproc)"));
  }
  result.wall_ns = NowNs() - start;
  sampling.Finish(result);
  baseline();
  return result;
}

absl::StatusOr<CycleResult> RunForked(const CycleOptions& options, const BackendEnvironment& env) {
  CycleResult result;
  result.syscalls = options.backend.count_syscalls ? profiling::SyscallCounter::Availability()
                                                   : absl::UnavailableError("syscall counts off (--syscalls=off)");
  const char* tmp = getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/backendlab.XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) return Errno(absl::StrCat("cannot create a temporary directory ", dir));
  result.socket_dir = dir;
  const std::string socket_path = dir + "/postmaster.sock";
  auto remove_files = [&] {
    unlink(socket_path.c_str());
    rmdir(dir.c_str());
  };
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    remove_files();
    return absl::UnavailableError(absl::StrCat("socket path too long: ", socket_path));
  }
  const int listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  if (listen_fd < 0 || bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd, 1024) != 0) {
    absl::Status s = Errno(absl::StrCat("cannot listen on ", socket_path));
    if (listen_fd >= 0) close(listen_fd);
    remove_files();
    return s;
  }
  // Samples travel through a file nobody else can open: unlinked at once, so
  // it is gone with its last descriptor whatever happens.
  int samples_fd = -1;
  if (options.sampler) {
    const std::string samples_path = dir + "/samples";
    samples_fd = open(samples_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (samples_fd < 0) {
      absl::Status s = Errno(absl::StrCat("cannot create ", samples_path));
      close(listen_fd);
      remove_files();
      return s;
    }
    unlink(samples_path.c_str());
  }
  auto close_samples = [&] {
    if (samples_fd >= 0) close(samples_fd);
    samples_fd = -1;
  };
  int control[2], results[2];
  if (pipe2(control, O_CLOEXEC) != 0) {
    absl::Status s = Errno("pipe");
    close(listen_fd);
    close_samples();
    remove_files();
    return s;
  }
  if (pipe2(results, O_CLOEXEC) != 0) {
    absl::Status s = Errno("pipe");
    close(control[0]);
    close(control[1]);
    close(listen_fd);
    close_samples();
    remove_files();
    return s;
  }
  std::fflush(nullptr);
  const pid_t postmaster = fork();
  if (postmaster == 0) {
    close(control[1]);
    close(results[0]);
    Postmaster pm;
    pm.env = &env;
    pm.listen_fd = listen_fd;
    pm.control_fd = control[0];
    pm.results_fd = results[1];
    pm.baseline_forks = options.baseline_forks;
    pm.samples_fd = samples_fd;
    pm.sampler = options.sampler;
    pm.warmup = options.warmup;
    pm.socket_path = socket_path;
    pm.dir = dir;
    // Backends that have exited but are not reaped yet still hold a slot.
    pm.nslots = static_cast<size_t>(options.clients) * 4 + 64;
    pm.Main();
  }
  close(listen_fd);
  close(control[0]);
  close(results[1]);
  if (postmaster < 0) {
    absl::Status s = Errno("cannot fork the postmaster");
    close(control[1]);
    close(results[0]);
    close_samples();
    remove_files();
    return s;
  }
  result.postmaster_pid = postmaster;
  ClientLoop clients(options, socket_path, results[0], result);
  clients.Run();
  close(control[1]);  // stop: the postmaster reaps its backends and exits
  while (clients.DrainOne()) {
  }
  close(results[0]);
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(postmaster, &status, 0)) < 0 && errno == EINTR) {
  }
  remove_files();  // in case the postmaster died before it could
  if (waited < 0) {
    close_samples();
    return Errno("waitpid(postmaster)");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || result.postmaster_gone) {
    close_samples();
    return absl::InternalError(absl::StrCat(
        "the postmaster died (", WIFSIGNALED(status) ? absl::StrCat("signal ", WTERMSIG(status)) : absl::StrCat("status ", WEXITSTATUS(status)),
        ")"));
  }
  if (samples_fd >= 0) {
    internal::SampleHarvest harvest;
    result.samples_status = internal::ReadSampleChunks(samples_fd, options.warmup, harvest);
    close_samples();
    result.samples = std::move(harvest.samples);
    result.samples_dropped += harvest.dropped;  // beside any the postmaster could not write
    result.samples_truncated = harvest.truncated;
  }
  return result;
}

}  // namespace

std::string_view ModeName(Mode mode) { return mode == Mode::kFork ? "fork" : "inproc"; }

absl::StatusOr<Mode> ParseMode(std::string_view name) { return ParseName(name, kAllModes, ModeName, "mode"); }

absl::Status ValidateCycleOptions(const CycleOptions& o) {
  if (o.clients < 1 || o.clients > 1024) return absl::InvalidArgumentError("--clients must be 1..1024");
  if (o.connections < 0) return absl::InvalidArgumentError("--connections must be positive");
  if (o.connections == 0 && o.duration_ms <= 0) {
    return absl::InvalidArgumentError("give --connections=N or --duration=T");
  }
  if (o.connections > 0 && o.clients > o.connections) {
    return absl::InvalidArgumentError(
        absl::StrCat("--clients=", o.clients, " is more than --connections=", o.connections));
  }
  if (o.mode == Mode::kInproc && o.clients != 1) return absl::InvalidArgumentError("--mode=inproc runs one client");
  // An inproc backend is this process: its SIGKILL would take the tool with it.
  if (o.mode == Mode::kInproc && o.backend.kill_backend >= 0) {
    return absl::InvalidArgumentError("--kill-backend needs --mode=fork");
  }
  if (o.warmup < 0) return absl::InvalidArgumentError("--warmup must be >= 0");
  if (o.backend.work_pins < 0 || o.backend.work_lookups < 0 || o.backend.leak_pins < 0) {
    return absl::InvalidArgumentError("work sizes must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<CycleResult> RunCycle(const CycleOptions& options) {
  if (absl::Status s = ValidateCycleOptions(options); !s.ok()) return s;
  absl::StatusOr<SharedPool> pool = SharedPool::Create(options.backend.shared_buffers);
  if (!pool.ok()) return pool.status();
  absl::StatusOr<BackendEnvironment> env = PrepareBackendEnvironment(options.backend, &*pool);
  if (!env.ok()) return env.status();
  SigintScope sigint;
  absl::StatusOr<CycleResult> result = options.mode == Mode::kFork ? RunForked(options, *env) : RunInproc(options, *env);
  if (result.ok()) {
    for (profiling::PerfEvent event : options.backend.counters) {
      if (absl::Status s = profiling::PerfEventAvailability(event); !s.ok()) result->counters_unavailable.push_back(s);
    }
  }
  return result;
}

}  // namespace backendlab::lifecycle
