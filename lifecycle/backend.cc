// A backend's phases, templated over the refcount layout chosen at its start.
#include "lifecycle/backend.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <array>
#include <span>

#include "absl/strings/str_cat.h"
#include "base/compiler.h"
#include "buffers/layout_dispatch.h"
#include "catcache/catcache.h"
#include "lifecycle/internal/weight_work.h"
#include "base/private_pages.h"
#include "base/resource_usage.h"
#include "profiling/sampler.h"
#include "profiling/perf_events.h"
#include "waits/eventfd_epoll_latch.h"
#include "waits/signalfd_epoll_latch.h"
#include "waits/wait_dispatch.h"

namespace backendlab::lifecycle {
namespace {

using buffers::BufferId;
using buffers::RefCountTable;

// Times one phase at a time into the record; each phase is published (its bit
// in phases_done) only after its counters are written.
class PhaseRecorder {
 public:
  PhaseRecorder(BackendRecord& record, const profiling::PerfCounters& counters)
      : record_(record), counters_(counters), n_(counters.events().size()) {}

  // The perf counters are read innermost (PerfCounters::ReadAll's nesting),
  // so that a phase's syscall count holds none of the measurement's own calls
  // but the closing read (subtracted).
  void Begin(Phase phase) {
    profiling::SetSampleTag(static_cast<int32_t>(phase));
    begin_ = SampleThread();
    if (n_ > 0) counters_.ReadAll(profiling::PerfCounters::PhaseEdge::kBegin, std::span(begin_events_).first(n_));
  }
  void End(Phase phase) {
    std::array<int64_t, kNumPerfEvents> end_events;
    if (n_ > 0) counters_.ReadAll(profiling::PerfCounters::PhaseEdge::kEnd, std::span(end_events).first(n_));
    const ResourceSample used = SampleThread() - begin_;
    PhaseCounters& c = record_.phase[static_cast<int>(phase)];
    c.wall_ns = used.wall_ns;
    c.cpu_ns = used.cpu_ns;
    c.minor_faults = used.minor_faults;
    c.major_faults = used.major_faults;
    for (size_t i = 0; i < n_; ++i) {
      if (begin_events_[i] < 0 || end_events[i] < 0) continue;
      const profiling::PerfEvent event = counters_.events()[i];
      const int64_t own_reads = event == profiling::PerfEvent::kSyscalls ? 1 : 0;
      c.events[static_cast<int>(event)] = end_events[i] - begin_events_[i] - own_reads;
    }
    c.syscalls = c.events[static_cast<int>(profiling::PerfEvent::kSyscalls)];
    __atomic_or_fetch(&record_.phases_done, 1u << static_cast<int>(phase), __ATOMIC_RELEASE);
  }

 private:
  BackendRecord& record_;
  const profiling::PerfCounters& counters_;
  const size_t n_;
  ResourceSample begin_;
  std::array<int64_t, kNumPerfEvents> begin_events_{};
};

// The buffers a backend's work touches: spread over the pool, different per
// backend, deterministic.
BufferId WorkBuffer(int64_t sequence, int64_t i, uint32_t nbuffers) {
  uint64_t x = static_cast<uint64_t>(sequence) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  return static_cast<BufferId>(x % nbuffers);
}

absl::Status WaitForTerminate(int fd) {
  char c;
  for (;;) {
    const ssize_t n = read(fd, &c, 1);
    if (n == 1 || n == 0) return absl::OkStatus();  // "terminate", or the client closed
    // ECONNRESET: the client closed with our "ready" unread (a stopped or
    // killed tool): it went away, as EOF says, and is no error of ours.
    if (errno == ECONNRESET) return absl::OkStatus();
    if (errno != EINTR) return absl::UnavailableError(absl::StrCat("backend read: ", std::strerror(errno)));
  }
}

// A backend's latch's shared part, in the backend's private memory (no
// other process or thread reaches it), destroyed after the latch and the
// set that hold it.
template <waits::WaitSetLatch L>
struct PrivateLatchShared {
  PrivateLatchShared() = default;
  PrivateLatchShared(const PrivateLatchShared&) = delete;
  PrivateLatchShared& operator=(const PrivateLatchShared&) = delete;
  ~PrivateLatchShared() { L::DestroyShared(shared); }
  typename L::Shared shared;
};

// The session with queries: the latch and the wait set, "ready", each
// query answered, the end of `work`, then the wait for "terminate" — all
// through the set, as a PostgreSQL backend reads its client through
// FeBeWaitSet. A client that went away (EOF, a reset) ends it as
// "terminate" would.
template <waits::WaitSetLatch L, waits::WaitSet S>
absl::Status ServeQueries(const BackendEnvironment& env, int client_fd, PhaseRecorder& phases, BackendRecord& record) {
  // This backend's latch: nobody sets it in the mock, but every set holds
  // it, as PostgreSQL's hold MyLatch.
  PrivateLatchShared<L> shared;
  if (absl::Status s = L::InitShared(shared.shared); !s.ok()) return s;
  absl::StatusOr<L> latch = L::Own(shared.shared, env.death_watch_fd);
  if (!latch.ok()) return latch.status();
  absl::StatusOr<S> set = S::Create(*latch, env.death_watch_fd, client_fd);
  if (!set.ok()) return set.status();
  auto gone = [](int err) { return err == EPIPE || err == ECONNRESET; };
  auto failed = [](const char* what, int err) {
    return absl::UnavailableError(absl::StrCat("backend ", what, ": ", err < 0 ? "the postmaster died" : std::strerror(err)));
  };
  bool ended = false;  // the client went away
  if (const int err = waits::SendAll(*set, client_fd, &kReadyByte, 1); err != 0) {
    if (!gone(err)) return failed("write", err);
    ended = true;
  }
  for (int64_t q = 0; q < env.config.queries && !ended; ++q) {
    char c;
    const waits::Received r = set->Receive(client_fd, &c, 1);
    if (r.bytes <= 0 || c != kQueryByte) {
      if (r.bytes < 0 && !gone(r.error)) return failed("read", r.postmaster_died ? -1 : r.error);
      ended = true;  // EOF, or "terminate" before the last query
      break;
    }
    if (const int err = waits::SendAll(*set, client_fd, &kAnswerByte, 1); err != 0) {
      if (!gone(err)) return failed("write", err);
      ended = true;
    }
  }
  phases.End(Phase::kWork);
  profiling::SetSampleTag(kSampleTagWait);
  record.ready_ns = NowNs();
  if (!ended) {
    char c;
    const waits::Received r = set->Receive(client_fd, &c, 1);
    if (r.bytes < 0 && !gone(r.error)) return failed("read", r.postmaster_died ? -1 : r.error);
  }
  record.terminate_ns = NowNs();
  return absl::OkStatus();
}

// The end of `work` and the wait for "terminate": through a wait set with
// queries, plain send() and read() without (pgbench -C's connection).
// A backend process's latch is a signalfd, as PostgreSQL's (>= 14) on
// Linux; a backend thread's an eventfd. SetLatch wakes a signalfd's owner
// with kill(pid, SIGURG), which names a process, not one of its threads:
// there is one such latch per process (SignalfdEpollLatch::Own refuses a
// second), and a threaded server's backends each need a latch that any
// thread can set without a signal. The mock sets no latch, so the two
// differ only in their set-up: eventfd() where the signalfd latch has
// sigprocmask and signalfd().
absl::Status Session(const BackendEnvironment& env, int client_fd, PhaseRecorder& phases, BackendRecord& record) {
  if (env.config.queries > 0 && client_fd >= 0) {
    auto serve = [&]<waits::WaitSetLatch L>() {
      return waits::WithWaitStrategy<L>(env.config.wait, [&]<waits::WaitSet S>() {
        return ServeQueries<L, S>(env, client_fd, phases, record);
      });
    };
    if (env.kind == BackendKind::kThread) return serve.template operator()<waits::EventfdEpollLatch>();
    return serve.template operator()<waits::SignalfdEpollLatch>();
  }
  phases.End(Phase::kWork);
  profiling::SetSampleTag(kSampleTagWait);
  record.ready_ns = NowNs();
  if (client_fd >= 0) {
    // A client that has gone away (EPIPE, ECONNRESET) ends the session the way
    // its "terminate" would, as a PostgreSQL backend exits on client EOF; any
    // other send error is the backend's failure.
    if (send(client_fd, &kReadyByte, 1, MSG_NOSIGNAL) != 1) {
      if (errno != EPIPE && errno != ECONNRESET) {
        return absl::UnavailableError(absl::StrCat("backend write: ", std::strerror(errno)));
      }
    } else if (absl::Status s = WaitForTerminate(client_fd); !s.ok()) {
      return s;
    }
  }
  record.terminate_ns = NowNs();
  return absl::OkStatus();
}

// The end of the start phase (`fork`, `thread_start`, `handoff`): all the
// backend did since `since` (a forked child's or a new thread's counters
// start at zero; a pooled backend's since it received the connection) —
// closing the postmaster's descriptors, signal set-up, first touches of
// code, stack and heap pages — belongs to starting it; the postmaster adds
// its own call (fork, pthread_create, sendmsg) and the wall time since accept.
void RecordStart(BackendRecord& record, const ResourceSample& since) {
  record.child_start_ns = NowNs();
  const ResourceSample started = SampleThread() - since;
  PhaseCounters& start = record.phase[static_cast<int>(Phase::kFork)];
  start.cpu_ns = started.cpu_ns;
  start.minor_faults = started.minor_faults;
  start.major_faults = started.major_faults;
}

// An exit check's (or a reset's) findings into the record, the leaked pins
// taken out of shared memory too, as AtProcExit_Buffers did.
void RecordLeaks(const BackendEnvironment& env, const buffers::ExitCheckResult& check, BackendRecord& record) {
  for (const buffers::Leak& leak : check.leaks) {
    env.pool->SharedRefCount(leak.buffer).fetch_sub(static_cast<uint32_t>(leak.count), std::memory_order_relaxed);
    if (record.leaks_found < kMaxReportedLeaks) {
      record.leak_buffers[record.leaks_found] = static_cast<int32_t>(leak.buffer);
      record.leak_counts[record.leaks_found] = leak.count;
    }
    ++record.leaks_found;
  }
}

// init_other, work, the session and the exit check: the same for a backend
// whose structures were just built and for a pooled one's, built before.
template <RefCountTable T>
absl::Status Connection(const BackendEnvironment& env, int client_fd, T& table, catcache::CatCacheSet& caches,
                        PhaseRecorder& phases, BackendRecord& record) {
  const BackendConfig& config = env.config;
  // What a real backend's start-up does besides (the relcache init file,
  // settings, authentication...), as the weight profile has it: nothing
  // without one.
  phases.Begin(Phase::kInitOther);
  if (env.weight) {
    if (absl::Status s = internal::RunPhaseWeight(*env.weight, env.weight->weight().startup); !s.ok()) return s;
  }
  phases.End(Phase::kInitOther);

  phases.Begin(Phase::kWork);
  for (int64_t i = 0; i < config.work_pins; ++i) {
    const BufferId b = WorkBuffer(record.sequence, i, config.shared_buffers.nbuffers);
    if (absl::Status s = table.Pin(b); !s.ok()) return s;
    env.pool->SharedRefCount(b).fetch_add(1, std::memory_order_relaxed);
    CompilerBarrier();
    env.pool->SharedRefCount(b).fetch_sub(1, std::memory_order_relaxed);
    if (absl::Status s = table.Unpin(b); !s.ok()) return s;
  }
  if (record.sequence == config.kill_backend) raise(SIGKILL);  // a backend dying mid-work
  if (absl::StatusOr<catcache::FirstQueriesResult> r = catcache::RunFirstQueries(caches, env.lookups); !r.ok()) {
    return r.status();
  }
  for (int32_t i = 0; i < config.leak_pins; ++i) {  // a planted bug: pins never released
    const BufferId b = WorkBuffer(record.sequence, -1 - i, config.shared_buffers.nbuffers);
    if (absl::Status s = table.Pin(b); !s.ok()) return s;
    env.pool->SharedRefCount(b).fetch_add(1, std::memory_order_relaxed);
  }
  if (env.weight) {
    if (absl::Status s = internal::RunPhaseWeight(*env.weight, env.weight->weight().work); !s.ok()) return s;
  }
  if (absl::Status s = Session(env, client_fd, phases, record); !s.ok()) return s;

  // Exit callbacks in PostgreSQL's order: the buffer check first (it was
  // registered last, with on_shmem_exit), then the backend's own teardown.
  phases.Begin(Phase::kExitCheck);
  const buffers::ExitCheckResult check = buffers::RunExitCheck(table, config.exit_check, config.exit_kernel);
  RecordLeaks(env, check, record);
  phases.End(Phase::kExitCheck);
  record.exit_check_ran = check.ran ? 1 : 0;
  return absl::OkStatus();
}

template <RefCountTable T>
absl::Status RunPhases(const BackendEnvironment& env, int client_fd, BackendRecord& record) {
  const BackendConfig& config = env.config;
  const profiling::PerfCounters counters = profiling::PerfCounters::Open(env.counter_events);
  PhaseRecorder phases(record, counters);
  RecordStart(record, ResourceSample{});

  phases.Begin(Phase::kInitBuffers);
  absl::StatusOr<T> table = T::Create(config.shared_buffers.nbuffers);
  if (!table.ok()) return table.status();
  phases.End(Phase::kInitBuffers);

  phases.Begin(Phase::kInitCatcache);
  absl::StatusOr<std::unique_ptr<catcache::CatCacheSet>> caches = catcache::CatCacheSet::Create(config.catcache, env.syscache);
  if (!caches.ok()) return caches.status();
  phases.End(Phase::kInitCatcache);

  if (absl::Status s = Connection(env, client_fd, *table, **caches, phases, record); !s.ok()) return s;

  phases.Begin(Phase::kTeardown);
  caches->reset();
  { T gone = *std::move(table); }
  if (env.weight) {
    if (absl::Status s = internal::RunPhaseWeight(*env.weight, env.weight->weight().exit); !s.ok()) return s;
    if (env.kind == BackendKind::kThread) {
      internal::ReleaseWeightPages();  // a process would give them back at its exit
    } else if (env.weight->weight().exit_path == ExitPath::kExit) {
      internal::RunExitHandlers();  // proc_exit's exit(): the handlers and destructors, measured here
    }
  }
  phases.End(Phase::kTeardown);
  return absl::OkStatus();
}

// The backend's own counters at its end (RunBackend, a pooled connection),
// so that whoever reaps or frees it can take what follows as the last phase.
void RecordEnd(BackendRecord& record) {
  const ResourceSample end = SampleThread();
  record.exit_cpu_ns = end.cpu_ns;
  record.exit_minor_faults = end.minor_faults;
  record.exit_major_faults = end.major_faults;
  record.exit_ns = NowNs();
}

template <RefCountTable T>
class PooledBackendOf final : public PooledBackend {
 public:
  PooledBackendOf(const BackendEnvironment& env, std::unique_ptr<PageArena> arena, T table,
                  std::unique_ptr<catcache::CatCacheSet> caches)
      : env_(env), arena_(std::move(arena)), table_(std::move(table)), caches_(std::move(caches)) {}

  absl::Status Serve(int client_fd, const ResourceSample& received, BackendRecord& record) override {
    ScopedPageArena scope(arena_.get());
    const absl::Status status = ServePhases(client_fd, received, record);
    RecordEnd(record);
    return status;
  }
  size_t HeldPins() const override { return table_.HeldCount(); }
  size_t CacheEntries() const override { return caches_->Stats().entries; }

 private:
  absl::Status ServePhases(int client_fd, const ResourceSample& received, BackendRecord& record) {
    const BackendConfig& config = env_.config;
    const profiling::PerfCounters counters = profiling::PerfCounters::Open(env_.counter_events);
    PhaseRecorder phases(record, counters);
    RecordStart(record, received);
    // Built when the backend was pre-forked, reset after its last
    // connection: nothing to do (the phases are kept, so every mode has them).
    phases.Begin(Phase::kInitBuffers);
    phases.End(Phase::kInitBuffers);
    phases.Begin(Phase::kInitCatcache);
    phases.End(Phase::kInitCatcache);
    if (absl::Status s = Connection(env_, client_fd, table_, *caches_, phases, record); !s.ok()) return s;

    // The reset (PooledBackend says what it clears and why).
    phases.Begin(Phase::kTeardown);
    if (record.exit_check_ran == 0) {
      RecordLeaks(env_, buffers::RunExitCheck(table_, buffers::ExitCheckPolicy::kAlways, config.exit_kernel), record);
    }
    caches_.reset();
    absl::StatusOr<std::unique_ptr<catcache::CatCacheSet>> caches = catcache::CatCacheSet::Create(config.catcache, env_.syscache);
    if (!caches.ok()) return caches.status();
    caches_ = *std::move(caches);
    if (env_.weight) {
      if (absl::Status s = internal::RunPhaseWeight(*env_.weight, env_.weight->weight().exit); !s.ok()) return s;
      internal::ReleaseWeightPages();
    }
    phases.End(Phase::kTeardown);
    return absl::OkStatus();
  }

  const BackendEnvironment& env_;
  std::unique_ptr<PageArena> arena_;  // outlives the structures whose pages it keeps
  T table_;
  std::unique_ptr<catcache::CatCacheSet> caches_;
};

}  // namespace

absl::StatusOr<BackendEnvironment> PrepareBackendEnvironment(const BackendConfig& config, SharedPool* pool) {
  BackendEnvironment env;
  env.config = config;
  absl::StatusOr<catcache::SyscacheProfile> syscache = catcache::BuiltinProfile(config.syscache);
  if (!syscache.ok()) return syscache.status();
  env.syscache = *std::move(syscache);
  env.lookups = catcache::MakeFirstQueries(env.syscache, config.work_lookups);
  env.pool = pool;
  env.counter_events = config.counters;
  if (config.weight) {
    absl::StatusOr<std::shared_ptr<const internal::WeightSupport>> weight = internal::WeightSupport::Prepare(*config.weight);
    if (!weight.ok()) return weight.status();
    env.weight = *std::move(weight);
  }
  if (config.count_syscalls) env.counter_events.push_back(profiling::PerfEvent::kSyscalls);
  // Probed here, once: every backend inherits the answers, so a refused event
  // costs a backend no failing perf_event_open in the phase being measured.
  for (profiling::PerfEvent event : env.counter_events) (void)profiling::PerfEventAvailability(event);
  return env;
}

absl::Status RunBackend(const BackendEnvironment& env, int client_fd, BackendRecord& record) {
  const absl::Status status = buffers::WithLayout(env.config.layout, [&]<RefCountTable T>() {
    return RunPhases<T>(env, client_fd, record);
  });
  // The backend's own counters at its end, so that whoever reaps it can take
  // the kernel's teardown (wait4's totals minus these) as the reap phase.
  RecordEnd(record);
  return status;
}

absl::StatusOr<std::unique_ptr<PooledBackend>> PooledBackend::Build(const BackendEnvironment& env) {
  return buffers::WithLayout(env.config.layout, [&]<RefCountTable T>() -> absl::StatusOr<std::unique_ptr<PooledBackend>> {
    auto arena = std::make_unique<PageArena>();
    ScopedPageArena scope(arena.get());
    absl::StatusOr<T> table = T::Create(env.config.shared_buffers.nbuffers);
    if (!table.ok()) return table.status();
    absl::StatusOr<std::unique_ptr<catcache::CatCacheSet>> caches =
        catcache::CatCacheSet::Create(env.config.catcache, env.syscache);
    if (!caches.ok()) return caches.status();
    return std::unique_ptr<PooledBackend>(
        new PooledBackendOf<T>(env, std::move(arena), *std::move(table), *std::move(caches)));
  });
}

}  // namespace backendlab::lifecycle
