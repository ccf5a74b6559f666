// Connect/disconnect loops against a mock postmaster, like `pgbench -C`: the
// `fork` mode forks a postmaster that listens on a Unix socket in a private
// temporary directory and forks one backend per connection; the `inproc` mode
// runs the same backend lifecycle in this process, without fork or socket.
#ifndef BACKENDLAB_LIFECYCLE_CYCLE_H_
#define BACKENDLAB_LIFECYCLE_CYCLE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/histogram.h"
#include "base/names.h"
#include "base/processes.h"
#include "base/server_usage.h"
#include "lifecycle/backend.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/cycle_stats.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle {

// How a connection's backend runs: a forked process (PostgreSQL's model),
// in this process (no fork, no socket), a thread of the mock server's one
// process (what a threaded PostgreSQL would do), or a pre-forked process
// that serves one connection after another (PooledBackend).
enum class Mode { kFork, kInproc, kThread, kPrefork };
inline constexpr NamedValue<Mode> kModeNames[] = {
    {Mode::kFork, "fork"}, {Mode::kInproc, "inproc"}, {Mode::kThread, "thread"}, {Mode::kPrefork, "prefork"}};
inline std::string_view ModeName(Mode mode) { return NameOf(mode, kModeNames); }
absl::StatusOr<Mode> ParseMode(std::string_view name);
inline BackendKind BackendKindOf(Mode mode) {
  return mode == Mode::kThread ? BackendKind::kThread : mode == Mode::kPrefork ? BackendKind::kPooled : BackendKind::kProcess;
}
// The modes whose backends the sampler can profile (CycleOptions::sampler):
// a thread's timer would be the process's, a pre-forked backend's samples
// would not be split by connection.
inline bool SampledMode(Mode mode) { return mode == Mode::kFork || mode == Mode::kInproc; }
// The modes that run a mock server (a postmaster process and a socket).
inline bool ServerMode(Mode mode) { return mode != Mode::kInproc; }

// Where a backend thread's private memory comes from (--thread-memory):
// fresh mappings, as a forked backend's, or an arena an ended backend gave
// back, its mappings reused (zeroed) by the next connection
// (base/private_pages.h).
enum class ThreadMemory { kFresh, kReuse };
inline constexpr NamedValue<ThreadMemory> kThreadMemoryNames[] = {{ThreadMemory::kFresh, "fresh"},
                                                                  {ThreadMemory::kReuse, "reuse"}};
inline std::string_view ThreadMemoryName(ThreadMemory m) { return NameOf(m, kThreadMemoryNames); }
absl::StatusOr<ThreadMemory> ParseThreadMemory(std::string_view name);

// How a fork-mode postmaster reaps its backends: `any`, PostgreSQL's way
// (its reaper calls waitpid(-1, WNOHANG) until it returns 0, and the kernel
// looks through the children on every call), or `pidfd`: each backend's
// pidfd in an epoll set, and wait4 on the pid of each one that became
// readable, which the kernel finds by its pid without looking through the
// others (do_wait_pid in kernel/exit.c). `any` is what is modelled;
// `pidfd` shows how much of the reaping's growth with held children is the
// waitpid(-1) loop's.
enum class Reap { kAny, kPidfd };
inline constexpr NamedValue<Reap> kReapNames[] = {{Reap::kAny, "any"}, {Reap::kPidfd, "pidfd"}};
inline std::string_view ReapName(Reap r) { return NameOf(r, kReapNames); }
absl::StatusOr<Reap> ParseReap(std::string_view name);

struct CycleOptions {
  Mode mode = Mode::kFork;
  Reap reap = Reap::kAny;  // fork mode
  ThreadMemory thread_memory = ThreadMemory::kFresh;  // thread mode
  // Prefork mode: the pre-forked backends (--pool), at least hold +
  // clients, at most kMaxPool; 0: one more than the clients and the held
  // connections, so that a backend is idle while another resets.
  int pool = 0;
  BackendConfig backend;
  int clients = 1;
  int64_t connections = 200;  // measured connections; 0: run for `duration` instead
  absl::Duration duration = absl::ZeroDuration();
  int64_t warmup = 20;        // connections run first and left out of every figure
  // Server modes: connections opened first and held, idle, while the loop
  // runs (`cycle --hold`): so many backends live beside the loop's, as `pg
  // --hold` holds them on a real server. They take the first sequence
  // numbers (before the warm-up) and are left out of every figure but
  // their own (CycleResult::hold_open_ns, held_memory).
  int64_t hold = 0;
  int baseline_forks = 100;   // bare fork+_exit+waitpid cycles, before and after the run
  // Profile the measured part of the run: the postmaster and every measured
  // backend (fork mode) or this process (inproc), samples tagged with
  // SampleTagName()s. Unset: no timer, no handler, nothing to pay.
  std::optional<profiling::SamplerOptions> sampler;
  // Fork mode: system calls of these kinds counted on the postmaster and,
  // inherited, every backend it forks (as `pg` counts a real server's), for
  // CycleResult::server. Empty: not counted.
  std::vector<std::string> server_syscall_kinds;
  // Server modes: the postmaster's start layout (base/start_layout.h) drawn
  // from this seed, so that what a start fixes is drawn afresh for each
  // (`compare` gives each round's start its own). Unset: the postmaster
  // starts as the tool's fork left it, the same every time, as the tests
  // of exact fault counts need.
  std::optional<uint64_t> start_seed;
  // Called now and then with a one-line status (for a progress line).
  std::function<void(const std::string&)> progress;
  // Called with every measured backend's record as it arrives (tests, and
  // callers that want each backend); the result keeps none of them whole
  // unless they crashed or leaked (CycleStats::incidents).
  std::function<void(const BackendRecord&)> on_record;
};

// What a run found. Every per-connection figure is a histogram: its size does
// not grow with the number of connections.
struct CycleResult {
  CycleStats backends;                // measured backends' phases, warm-up crashes, incidents
  Histogram connect_latency_ns;       // connect() -> "ready" received, measured connections
  Histogram query_latency_ns;         // with queries: query sent -> answer received, measured connections
  int64_t connections = 0;            // measured connections that reached "ready"
  int64_t failed_connections = 0;     // closed by the server side before "ready"
  int64_t wall_ns = 0;                // the measured part of the run
  Histogram baseline_fork_ns;         // bare fork+exit+wait, same process as the forks
  // Why each perf event asked for (--counters, and syscalls with
  // --syscalls=on) is missing, if it is: one line each, "<event>: unavailable: <why>".
  std::vector<absl::Status> counters_unavailable;
  bool syscalls_counted = false;      // --syscalls=on and the kernel allowed it
  bool interrupted = false;           // a stop signal arrived (StopSignal() says which): stopped early, cleanly
  int64_t replaced = 0;               // prefork: pre-forked backends that died and were replaced
  // Prefork: the server's CPU left out of `server` as no connection's: the
  // pool's build (its members' forks and start-up) and its end (their
  // exits and reaping), and, with held connections, their opening and
  // their lives after the loop; -1: none reported.
  int64_t pool_outside_cpu_ns = -1;
  std::string socket_dir;             // where the socket was (gone when this returns)
  // With options.sampler: the samples of the measured backends and of the
  // postmaster (warm-up backends left out), unsymbolized.
  std::vector<profiling::RawSample> samples;
  int64_t samples_dropped = 0;    // samples lost to a full buffer
  int64_t samples_truncated = 0;  // samples whose stack was cut at profiling::kMaxFrames
  absl::Status samples_status = absl::OkStatus();  // not OK: the sample file was damaged; `samples` holds what was read
  // Fork mode: the postmaster's pid, to tell its samples (its fork() calls
  // are tagged `fork`) from the backends'.
  int32_t postmaster_pid = 0;
  // With options.hold: the time to open the held connections (from the
  // first connect() to the last "ready"), and the memory of the median held
  // backend, field by field (none if /proc could not be read for one); in
  // thread mode, the server process's growth from opening them, divided by
  // their number; in prefork mode, the median pre-forked backend's.
  int64_t hold_open_ns = -1;
  std::optional<ProcessMemory> held_memory;
  // Fork mode: the whole server as `pg` measures a real one — the
  // postmaster and every backend it reaped (getrusage of itself and its
  // children, from after the opening bare forks to the last backend's
  // reaping), over every connection it accepted, warm-up included. The bare
  // forks are left out of CPU and faults; system calls (perf, inherited,
  // opened when the postmaster starts) count their few calls too. With
  // options.hold, from after the last held backend's fork to the last
  // loop backend's reaping, the held ones' own lives left out (their exit
  // comes after), and over the loop's connections alone.
  ServerUsage server;
};

// Adds one run's figures and counts to `total` (one configuration's rounds
// in `compare`): histograms merged, counts and wall time summed, an
// interruption kept. Samples are not merged.
void MergeRound(const CycleResult& round, CycleResult& total);


// Runs the loop. Usage errors are InvalidArgument; a run that cannot set up
// (temp dir, bind, fork, mmap) or that fails for good on the way (a poll,
// accept, socket, connect or fork error, the socket removed from outside) is
// another error, one line naming the call and errno. Every child is reaped
// and the socket and directory are removed before it returns, on every path.
// Installs the stop handlers (base/interrupt.h); a stop requested before or
// during the run returns a result with `interrupted` set, and the request
// stays for the caller to see (StopSignal()).
absl::StatusOr<CycleResult> RunCycle(const CycleOptions& options);

// The most connections a cycle holds (--hold), as `pg --hold`.
inline constexpr int64_t kMaxHold = 100'000;
// The most pre-forked backends, whether the pool is given or the default
// (hold + clients + 1): a pool must hold every held connection and a
// backend per client beside them, so one limit serves both. What the host
// allows (processes, descriptors) is checked beside it.
inline constexpr int kMaxPool = static_cast<int>(kMaxHold) + kMaxClients + 1;
// The pre-forked backends of `options` (its pool, or hold + clients + 1).
inline int PoolSize(const CycleOptions& options) {
  return options.pool > 0 ? options.pool : static_cast<int>(options.hold) + options.clients + 1;
}

// Validates options without running anything (the CLI's bad-input checks),
// --clients against RLIMIT_NOFILE included.
absl::Status ValidateCycleOptions(const CycleOptions& options);

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_CYCLE_H_
