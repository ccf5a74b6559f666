// The run: options, the private directory and descriptors of a fork-mode
// run, the in-process mode, and the figures' one merge.
#include "lifecycle/cycle.h"

#include <alloca.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/interrupt.h"
#include "base/names.h"
#include "base/private_dir.h"
#include "base/processes.h"
#include "base/resource_usage.h"
#include "base/start_layout.h"
#include "base/unique_fd.h"
#include "lifecycle/internal/client_loop.h"
#include "lifecycle/internal/postmaster.h"
#include "lifecycle/internal/protocol.h"
#include "lifecycle/internal/sample_slots.h"
#include "profiling/perf_events.h"
#include "profiling/sampler.h"
#include "waits/postmaster_death.h"

namespace backendlab::lifecycle {
namespace {

// Descriptors the tool and the postmaster hold besides one per client:
// stdio, the pipes, the listening socket, the signalfd, the sample file,
// an accepted connection, and a few to spare.
constexpr int64_t kFdsBesidesClients = 16;

absl::Status Errno(std::string_view what) {
  return absl::UnavailableError(absl::StrCat(std::string(what), ": ", std::strerror(errno)));
}

// The run's private directory under $TMPDIR (base/private_dir.h), removed
// with the socket in it when this goes, on every path. (The sample file is
// unlinked at once.)
class TempDir {
 public:
  static constexpr char kSocketName[] = "/postmaster.sock";

  // Up to `name_chars` more characters in its name (a start's layout): as
  // many as leave the socket's path within sun_path, which every start
  // under this TMPDIR then shares.
  static absl::StatusOr<TempDir> Create(int name_chars = 0) {
    constexpr size_t kSunPath = sizeof(sockaddr_un::sun_path);
    const size_t plain = TempRoot().size() + sizeof("/backendlab.XXXXXX") - 1 + sizeof(kSocketName) - 1;
    const size_t room = plain < kSunPath - 1 ? kSunPath - 1 - plain : 0;
    const size_t pad = std::min(static_cast<size_t>(name_chars), room);
    absl::StatusOr<PrivateDir> dir = PrivateDir::Make("backendlab" + std::string(pad, '_'));
    if (!dir.ok()) return dir.status();
    return TempDir(std::move(*dir));
  }

  const std::string& path() const { return dir_.path(); }
  std::string SocketPath() const { return path() + kSocketName; }

 private:
  explicit TempDir(PrivateDir dir) : dir_(std::move(dir)) {}
  PrivateDir dir_;
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
  auto baseline = [&] {
    for (int i = 0; i < options.baseline_forks; ++i) {
      if (const int64_t ns = internal::BareFork(); ns >= 0) result.baseline_fork_ns.Record(ns);
    }
  };
  baseline();
  InprocSampling sampling(options.sampler);
  int64_t start = 0;
  const int64_t total = options.warmup + options.connections;
  for (int64_t seq = 0; options.connections == 0 || seq < total; ++seq) {
    if (StopRequested()) {
      result.interrupted = true;
      break;
    }
    const bool warmup = internal::IsWarmup(seq, options.warmup);
    if (seq == options.warmup) {
      if (absl::Status s = sampling.Start(); !s.ok()) return s;
      start = NowNs();
    }
    if (options.connections == 0 && !warmup && NowNs() - start >= absl::ToInt64Nanoseconds(options.duration)) break;
    BackendRecord record;
    record.sequence = seq;
    record.accept_ns = NowNs();
    if (absl::Status s = RunBackend(env, -1, record); !s.ok()) return s;
    profiling::SetSampleTag(kSampleTagClient);
    CompleteRecord({.pid = getpid(), .wait_status = 0, .usage = nullptr, .forked = false, .fork_parent_cost = {}, .reaped_ns = NowNs()},
                   record);
    if (warmup) {
      result.backends.AddWarmup(record);
    } else {
      result.backends.AddMeasured(record);
      if (options.on_record) options.on_record(record);
      result.connect_latency_ns.Record(record.ready_ns - record.accept_ns);
      ++result.connections;
    }
    if (options.progress && seq % 100 == 0) options.progress(absl::StrCat("cycle: ", seq, " backends (inproc)"));
  }
  result.wall_ns = start > 0 ? NowNs() - start : 0;
  sampling.Finish(result);
  baseline();
  return result;
}

// The mock server's socket, bound and listening.
absl::StatusOr<UniqueFd> ListenOn(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    return absl::UnavailableError(absl::StrCat("socket path too long: ", socket_path));
  }
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  UniqueFd listen_fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listen_fd.valid() || bind(listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd.get(), 1024) != 0) {
    return Errno(absl::StrCat("cannot listen on ", socket_path));
  }
  return listen_fd;
}

// What the postmaster is told of the run; its descriptors and paths are
// the caller's to add.
internal::PostmasterConfig PostmasterConfigOf(const CycleOptions& options, const BackendEnvironment& env) {
  internal::PostmasterConfig config;
  config.env = &env;
  config.baseline_forks = options.baseline_forks;
  config.warmup = options.hold + options.warmup;  // the first measured connection's sequence number
  config.hold = options.hold;
  config.sampler = options.sampler;
  // Backends that have exited but are not reaped yet still hold a slot.
  config.nslots = static_cast<size_t>(options.clients) * 4 + 64 + static_cast<size_t>(options.hold);
  config.threads = options.mode == Mode::kThread;
  if (options.mode == Mode::kPrefork) {
    config.pool = PoolSize(options);
    config.nslots = std::max(config.nslots, static_cast<size_t>(config.pool));
  }
  config.reuse_memory = options.thread_memory == ThreadMemory::kReuse;
  config.reap_pidfd = options.reap == Reap::kPidfd;
  return config;
}

// Memory per held connection once every held backend is ready and before
// the loop starts: the median of the postmaster's children (the held
// backends, or the pool's), or, backend threads, what the one process grew
// by as they opened (`before_held`: its memory before).
std::optional<ProcessMemory> HeldMemory(const CycleOptions& options, pid_t postmaster, const std::optional<ProcessMemory>& before_held) {
  if (options.mode != Mode::kThread) return MedianProcessMemory(ChildrenOf(postmaster));
  const std::optional<ProcessMemory> after = ReadProcessMemory(postmaster);
  if (!after || !before_held) return std::nullopt;
  auto each = [&](int64_t ProcessMemory::*field) { return ((*after).*field - (*before_held).*field) / options.hold; };
  return ProcessMemory{.rss_kb = each(&ProcessMemory::rss_kb),
                       .pss_kb = each(&ProcessMemory::pss_kb),
                       .private_kb = each(&ProcessMemory::private_kb),
                       .page_tables_kb = each(&ProcessMemory::page_tables_kb)};
}

// How a run with a postmaster ended, its wait status `status` in hand: OK,
// or the one error that says why, the cause before its symptoms.
absl::Status RunEnd(const CycleOptions& options, int status, bool postmaster_gone, const absl::Status& postmaster_failure,
                    const absl::Status& run) {
  const bool died = !WIFEXITED(status) || WEXITSTATUS(status) != 0 || postmaster_gone;
  const std::string how =
      WIFSIGNALED(status) ? absl::StrCat("signal ", WTERMSIG(status)) : absl::StrCat("status ", WEXITSTATUS(status));
  // A backend thread's crash kills the server process: whatever the clients
  // saw after it (a refused connect, a reset) is a symptom.
  if (options.mode == Mode::kThread && WIFSIGNALED(status)) {
    return absl::InternalError(absl::StrCat("the server process died (", how,
                                            "): with `mode`=thread a backend that crashes takes the server and every "
                                            "connection with it"));
  }
  // The postmaster's own failure first: when it fails it also closes its
  // socket, so clients that try again meanwhile fail with ENOENT, a symptom.
  if (!postmaster_failure.ok()) return postmaster_failure;
  if (!run.ok()) return run;
  if (died) return absl::InternalError(absl::StrCat("the postmaster died (", how, ")"));
  return absl::OkStatus();
}

absl::StatusOr<CycleResult> RunForked(const CycleOptions& options, const BackendEnvironment& env) {
  CycleResult result;
  const StartLayout layout = options.start_seed ? DrawStartLayout(*options.start_seed) : StartLayout{};
  absl::StatusOr<TempDir> dir = TempDir::Create(layout.name_chars);
  if (!dir.ok()) return dir.status();
  result.socket_dir = dir->path();
  const std::string socket_path = dir->SocketPath();
  absl::StatusOr<UniqueFd> listen_fd = ListenOn(socket_path);
  if (!listen_fd.ok()) return listen_fd.status();
  // Samples travel through a file nobody else can open: unlinked at once, so
  // it is gone with its last descriptor whatever happens.
  UniqueFd samples_fd;
  if (options.sampler) {
    const std::string samples_path = dir->path() + "/samples";
    samples_fd.Reset(open(samples_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!samples_fd.valid()) return Errno(absl::StrCat("cannot create ", samples_path));
    unlink(samples_path.c_str());
  }
  int control[2], results[2];
  if (pipe2(control, O_CLOEXEC) != 0) return Errno("pipe");
  UniqueFd control_read(control[0]), control_write(control[1]);
  if (pipe2(results, O_CLOEXEC) != 0) return Errno("pipe");
  UniqueFd results_read(results[0]), results_write(results[1]);

  // With queries, the backends' sets watch a postmaster-death pipe, as
  // PostgreSQL's do: made here, kept by the postmaster, dropped by the tool.
  std::optional<waits::PostmasterDeathPipe> death;
  BackendEnvironment server_env = env;
  server_env.kind = BackendKindOf(options.mode);
  if (env.config.queries > 0) {
    absl::StatusOr<waits::PostmasterDeathPipe> pipe = waits::PostmasterDeathPipe::Create();
    if (!pipe.ok()) return pipe.status();
    death = *std::move(pipe);
    server_env.death_watch_fd = death->watch_fd();
    // A backend thread shares the postmaster's descriptors: the write end
    // is closed with the process, and the thread must not close it.
    if (options.mode != Mode::kThread) server_env.death_own_fd = death->own_fd();
  }
  const BackendEnvironment* backend_env = &server_env;

  std::fflush(nullptr);
  const pid_t postmaster = fork();
  if (postmaster == 0) {
    control_write.Reset();
    results_read.Reset();
    internal::PostmasterConfig config = PostmasterConfigOf(options, *backend_env);
    config.listen_fd = listen_fd->get();
    config.control_fd = control_read.get();
    config.results_fd = results_write.get();
    config.samples_fd = samples_fd.get();
    config.socket_path = socket_path;
    config.dir = dir->path();
    ApplyStartLayout(layout);
    // The stack offset: the postmaster's frames, and every backend's it
    // forks, start this much lower.
    void* below = alloca(static_cast<size_t>(layout.stack_bytes));
    asm volatile("" : : "r"(below) : "memory");
    internal::RunPostmaster(config);  // never returns: no destructor of ours runs in it
  }
  const int fork_error = errno;
  listen_fd->Reset();
  control_read.Reset();
  results_write.Reset();
  death.reset();
  if (postmaster < 0) {
    errno = fork_error;
    return Errno("cannot fork the postmaster");
  }
  result.postmaster_pid = postmaster;
  // Opened once the postmaster exists: it may accept a connection or two
  // first, which `server.connections` then counts and these miss, a
  // fraction of a warm-up's worth.
  absl::StatusOr<profiling::SyscallCounters> server_syscalls = absl::UnavailableError("not asked for");
  if (!options.server_syscall_kinds.empty()) {
    std::vector<std::string_view> kinds(options.server_syscall_kinds.begin(), options.server_syscall_kinds.end());
    server_syscalls = profiling::SyscallCounters::OpenProcess(postmaster, kinds);
  }
  internal::ClientLoop clients(options, socket_path, results_read.get(), result);
  // A threaded server's held connections are in its one process: what it
  // grows by as they open.
  std::optional<ProcessMemory> before_held;
  if (options.hold > 0 && options.mode == Mode::kThread) before_held = ReadProcessMemory(postmaster);
  absl::Status run = clients.OpenHeld();
  // Once every held backend is ready and before the loop starts, the
  // postmaster's children are the held backends (or the pool's).
  if (run.ok() && options.hold > 0) result.held_memory = HeldMemory(options, postmaster, before_held);
  if (run.ok()) run = clients.Run();
  if (options.hold > 0) {
    // The server's usage is taken once the loop's backends are reaped and
    // before the held ones may end: asked for, waited for, then the held
    // connections close.
    if (run.ok() && !result.interrupted) run = clients.AwaitUsage(control_write.get());
    clients.CloseHeld();
  }
  control_write.Reset();  // stop: the postmaster reaps its backends and exits
  const absl::Status postmaster_failure = clients.DrainToEnd();
  results_read.Reset();
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(postmaster, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) return Errno("waitpid(postmaster)");
  result.server.connections = clients.accepted();  // the loop's: the held ones are not counted there
  if (server_syscalls.ok()) {
    profiling::SyscallCounters::Counts counts;
    if (server_syscalls->Read(counts)) {
      result.server.syscalls = counts.total;
      result.server.syscalls_by_kind = counts.by_kind;
    }
  }
  if (absl::Status end = RunEnd(options, status, clients.postmaster_gone(), postmaster_failure, run); !end.ok()) return end;
  if (samples_fd.valid()) {
    internal::SampleHarvest harvest;
    result.samples_status = internal::ReadSampleChunks(samples_fd.get(), options.hold + options.warmup, harvest);
    result.samples = std::move(harvest.samples);
    result.samples_dropped += harvest.dropped;  // beside any the postmaster could not write
    result.samples_truncated = harvest.truncated;
  }
  return result;
}

}  // namespace

absl::StatusOr<Mode> ParseMode(std::string_view name) { return ParseName(name, kModeNames, "mode"); }
absl::StatusOr<ThreadMemory> ParseThreadMemory(std::string_view name) {
  return ParseName(name, kThreadMemoryNames, "thread memory");
}
absl::StatusOr<Reap> ParseReap(std::string_view name) { return ParseName(name, kReapNames, "reaping"); }

absl::Status ValidateCycleOptions(const CycleOptions& o) {
  if (o.clients < 1 || o.clients > kMaxClients) {
    return absl::InvalidArgumentError(absl::StrCat("`clients` must be 1..", kMaxClients));
  }
  if (o.connections < 0) return absl::InvalidArgumentError("`connections` must be positive");
  if (o.connections == 0 && o.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("give `connections` or `duration`");
  }
  if (o.connections > 0 && o.clients > o.connections) {
    return absl::InvalidArgumentError(
        absl::StrCat("`clients`=", o.clients, " is more than `connections`=", o.connections));
  }
  if (o.mode == Mode::kInproc && o.clients != 1) return absl::InvalidArgumentError("`mode`=inproc runs one client");
  // An inproc backend is this process: its SIGKILL would take the tool with it.
  if (o.mode == Mode::kInproc && o.backend.kill_backend >= 0) {
    return absl::InvalidArgumentError("`kill_backend` needs a server mode (fork, thread or prefork)");
  }
  if (o.backend.queries < 0 || o.backend.queries > 1'000'000) return absl::InvalidArgumentError("`queries` must be 0..10^6");
  if (o.mode == Mode::kInproc && o.backend.weight) {
    return absl::InvalidArgumentError("`backend_profile` needs a server mode (its postmaster parts are a server's)");
  }
  if (o.mode == Mode::kInproc && o.backend.queries > 0) {
    return absl::InvalidArgumentError("`queries` needs a server mode (a query is a round trip with a client)");
  }
  if (o.warmup < 0) return absl::InvalidArgumentError("`warmup` must be >= 0");
  if (o.hold < 0 || o.hold > kMaxHold) return absl::InvalidArgumentError(absl::StrCat("`hold` must be 0..", kMaxHold));
  if (o.hold > 0 && !ServerMode(o.mode)) return absl::InvalidArgumentError("`hold` needs a server mode (fork, thread or prefork)");
  if (o.mode == Mode::kPrefork && o.pool > 0 && o.pool < o.hold + o.clients) {
    return absl::InvalidArgumentError(absl::StrCat("`pool`=", o.pool, " is fewer than `hold` + `clients` (", o.hold + o.clients,
                                                   "): the held connections would keep the loop waiting; give `pool`=", o.hold + o.clients,
                                                   " or more, or leave it out (`hold` + `clients` + 1)"));
  }
  // SampledMode's reasons, each mode's own.
  if (o.sampler && !SampledMode(o.mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`profile` needs `mode`=fork or inproc (",
        o.mode == Mode::kThread ? "the sampler's timer is a process's, not a thread's"
                                : "a pre-forked backend's samples are not split by connection",
        ")"));
  }
  if (o.mode != Mode::kThread && o.thread_memory != ThreadMemory::kFresh) {
    return absl::InvalidArgumentError("`thread_memory` needs `mode`=thread");
  }
  if (o.mode != Mode::kPrefork && o.pool != 0) return absl::InvalidArgumentError("`pool` needs `mode`=prefork");
  if (o.mode != Mode::kFork && o.reap != Reap::kAny) {
    return absl::InvalidArgumentError(
        "`reap`=pidfd needs `mode`=fork (a backend thread is joined; a pre-forked backend outlives its connections)");
  }
  if (o.pool < 0 || o.pool > kMaxPool) return absl::InvalidArgumentError(absl::StrCat("`pool` must be 1..", kMaxPool));
  const int64_t pool = o.mode == Mode::kPrefork ? PoolSize(o) : 0;
  if (o.hold > 0 || pool > 0) {
    // Descriptors (raising the soft limit to the hard one), processes and
    // memory for the held backends, checked before anything starts; a
    // pool's members are processes the postmaster holds a channel to.
    HostNeeds needs;
    needs.what = o.hold > 0 ? absl::StrCat("`hold`=", o.hold) : absl::StrCat("a pool of ", pool);
    needs.descriptors = std::max(o.hold + o.clients, pool) + kFdsBesidesClients;
    needs.processes = std::max(o.hold + o.clients, pool) + 2;  // threads count against the same limits (RLIMIT_NPROC, threads-max)
    needs.uid = geteuid();
    needs.memory_bytes = o.hold * kHeldBackendBytes;
    if (absl::Status s = CheckHostLimits(needs); !s.ok()) return s;
  }
  if (o.backend.work_pins < 0 || o.backend.work_lookups < 0 || o.backend.leak_pins < 0) {
    return absl::InvalidArgumentError("work sizes must be >= 0");
  }
  // Each client holds a socket in the tool; poll() refuses more descriptors
  // than RLIMIT_NOFILE allows (EINVAL), so find out now, not mid-run.
  rlimit nofile{};
  if (ServerMode(o.mode) && getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    const int64_t needed = o.clients + o.hold + kFdsBesidesClients;
    if (static_cast<int64_t>(nofile.rlim_cur) < needed) {
      return absl::InvalidArgumentError(absl::StrCat("`clients`=", o.clients, " needs `ulimit -n ", needed,
                                                     "` or more (it is ", nofile.rlim_cur, ")"));
    }
  }
  return absl::OkStatus();
}

void MergeRound(const CycleResult& round, CycleResult& total) {
  total.backends.Merge(round.backends);
  total.connect_latency_ns.Merge(round.connect_latency_ns);
  total.query_latency_ns.Merge(round.query_latency_ns);
  if (total.server.connections == 0) {
    total.server = round.server;  // the first round: its figures, counted or not
  } else {
    total.server += round.server;
  }
  total.baseline_fork_ns.Merge(round.baseline_fork_ns);
  total.connections += round.connections;
  total.failed_connections += round.failed_connections;
  total.wall_ns += round.wall_ns;
  if (total.counters_unavailable.empty()) total.counters_unavailable = round.counters_unavailable;
  total.syscalls_counted = round.syscalls_counted;
  total.interrupted |= round.interrupted;
  total.replaced += round.replaced;
  total.pool_outside_cpu_ns = total.pool_outside_cpu_ns < 0 || round.pool_outside_cpu_ns < 0
                                  ? round.pool_outside_cpu_ns
                                  : total.pool_outside_cpu_ns + round.pool_outside_cpu_ns;
}

absl::StatusOr<CycleResult> RunCycle(const CycleOptions& options) {
  if (absl::Status s = ValidateCycleOptions(options); !s.ok()) return s;
  InstallStopHandlers();  // idempotent; the request is never reset here
  if (StopRequested()) {  // asked before this run began: run nothing
    CycleResult stopped;
    stopped.interrupted = true;
    return stopped;
  }
  absl::StatusOr<SharedPool> pool = SharedPool::Create(options.backend.shared_buffers);
  if (!pool.ok()) return pool.status();
  absl::StatusOr<BackendEnvironment> env = PrepareBackendEnvironment(options.backend, &*pool);
  if (!env.ok()) return env.status();
  // The events the backends count, held open by the tool for the run: the
  // first counter of a tracepoint (syscalls) that nobody else counts makes
  // the kernel enable it, which waits for an RCU grace period — milliseconds
  // that each short-lived backend would pay again in its `fork` phase.
  const profiling::PerfCounters keep_enabled = profiling::PerfCounters::Open(env->counter_events);
  absl::StatusOr<CycleResult> result = ServerMode(options.mode) ? RunForked(options, *env) : RunInproc(options, *env);
  if (result.ok()) {
    // The one availability path for every counter, syscalls included: what
    // PrepareBackendEnvironment probed before the backends forked.
    uint32_t seen = 0;
    for (profiling::PerfEvent event : env->counter_events) {
      const uint32_t bit = 1u << static_cast<int>(event);
      if ((seen & bit) != 0) continue;  // --counters=all and --syscalls=on name it twice
      seen |= bit;
      const absl::Status s = profiling::PerfEventAvailability(event);
      if (!s.ok()) result->counters_unavailable.push_back(s);
      if (event == profiling::PerfEvent::kSyscalls) result->syscalls_counted = s.ok();
    }
  }
  return result;
}

}  // namespace backendlab::lifecycle
