// One backend's life: init the refcount table and the catalog caches, do a
// little work, tell the client it is ready, wait for "terminate", run the exit
// callbacks in PostgreSQL's order, and record every phase as it goes.
#ifndef BACKENDLAB_LIFECYCLE_BACKEND_H_
#define BACKENDLAB_LIFECYCLE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffers/exit_check.h"
#include "buffers/refcount_table.h"
#include "buffers/shared_buffers.h"
#include "catcache/bucket_allocator.h"
#include "catcache/first_queries.h"
#include "catcache/syscache_profile.h"
#include "base/resource_usage.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/backend_weight.h"
#include "lifecycle/shared_pool.h"
#include "profiling/perf_events.h"
#include "waits/wait_set.h"

namespace backendlab::lifecycle {

namespace internal {
class WeightSupport;
}  // namespace internal

struct BackendConfig {
  buffers::Layout layout = buffers::Layout::kHash;
  buffers::ExitCheckPolicy exit_check = buffers::ExitCheckPolicy::kAssert;
  // How the exit check scans a table that needs a scan (array, bytes): the
  // vectorised kernel by default; naive is 9.0's loop, one entry at a time.
  buffers::ScanKernel exit_kernel = buffers::ScanKernel::kSimd;
  buffers::SharedBuffers shared_buffers{};
  catcache::BucketStrategy catcache = catcache::BucketStrategy::kPalloc0;
  std::string syscache = "pg17";  // the syscache set (catcache::BuiltinProfile name): pg90, pg17
  int64_t work_pins = 20;      // pin+unpin pairs in the work phase
  int64_t work_lookups = 100;  // catcache searches in the work phase
  bool count_syscalls = false;  // per phase, where the kernel allows; costs each backend a perf_event_open
  // perf_event_open counters per phase (task-clock, context-switches, cycles,
  // ...), where the kernel allows: each costs every backend a perf_event_open.
  std::vector<profiling::PerfEvent> counters;
  // Queries each backend serves after "ready", in its `work` phase, waiting
  // for each with `wait` (server modes; 0: none, the connection is pgbench -C's).
  int64_t queries = 0;
  waits::WaitStrategy wait = waits::WaitStrategy::kLongLived;
  // What each backend does on top of its modelled structures so that it
  // weighs what a real one weighs (--backend-profile; backend_weight.h).
  // Server modes (its postmaster parts are a server's).
  std::optional<BackendWeight> weight;
  std::string weight_source;  // the file it came from, for reports
  // Fault injection for tests and demonstrations:
  int32_t leak_pins = 0;        // buffers each backend leaves pinned at exit
  int64_t kill_backend = -1;    // the backend with this sequence number SIGKILLs itself in `work`
};

// What every backend shares, prepared once before any fork (so a backend pays
// nothing to build it, as catalog contents cost a PostgreSQL backend nothing
// to exist): the syscache set, the lookup sequence and the shared buffer pool.
struct BackendEnvironment {
  BackendConfig config;
  catcache::SyscacheProfile syscache;
  std::vector<catcache::Lookup> lookups;
  SharedPool* pool = nullptr;
  std::vector<profiling::PerfEvent> counter_events;  // config.counters, and syscalls if counted
  // The postmaster-death pipe (fork mode with queries): the end every wait
  // set watches, and the postmaster's, which a backend closes first thing.
  int death_watch_fd = -1;
  int death_own_fd = -1;
  // config.weight, prepared: its file, its libraries loaded, its CPU loop's rate.
  std::shared_ptr<const internal::WeightSupport> weight;
  // The backends are threads of one server process (cycle --mode=thread),
  // or pooled processes (PooledBackend, which is what it does for them):
  // a weight's touched pages are given back at teardown, as nothing else
  // would free them, and its `exit` exit path is not taken (libc's exit
  // handlers and the libraries' destructors are the process's, run once at
  // its end, not a connection's).
  BackendKind kind = BackendKind::kProcess;
};

absl::StatusOr<BackendEnvironment> PrepareBackendEnvironment(const BackendConfig& config, SharedPool* pool);

// Runs the backend's phases, writing each into `record` as soon as it ends (so
// a backend that dies leaves what it had measured). `client_fd` >= 0: send
// "ready" after `work` and wait for "terminate" or EOF; -1 (inproc): no wait.
// With queries, "ready" goes before them, inside `work`, which ends with the
// last answer; each query, and the "terminate", is waited for through a
// wait set of config.wait over the backend's latch (signalfd-epoll; a
// thread's, eventfd-epoll: Session says why) and the postmaster-death pipe — made in `work` too, as pq_init makes
// FeBeWaitSet at a backend's start.
// Last, it records its own counters and the time (exit_*), as the moment
// the process would _exit. Returns the first error; the record says how far
// it got. A client that went away (EOF, EPIPE, ECONNRESET) ends the session
// as "terminate" would: no error.
absl::Status RunBackend(const BackendEnvironment& env, int client_fd, BackendRecord& record);

// A pre-forked backend (`cycle --mode=prefork`): a process forked before
// any connection, which builds its private structures once (its refcount
// table and catalog caches, on pages of its own arena) and serves one
// connection after another, resetting between them instead of exiting.
// A connection's phases are RunBackend's, with three differences: its
// start is `handoff` (the postmaster passing the connection), init_buffers
// and init_catcache have nothing left to build, and its end is `reset`
// (in the teardown slot), which clears what the next connection must not
// see:
// - pins still held: found and released with a full check whatever the
//   exit-check policy (the exit check's own, if it ran, already did), and
//   counted in the record's leaks — a pooled backend cannot leave a leak
//   to the kernel;
// - the catalog caches: rebuilt empty (another database's entries, or
//   stale ones, must not survive), from the backend's arena (no fault);
// - a weight's per-connection pages: given back to the arena.
// Not modelled (nothing in the mock holds them): session settings,
// prepared statements, temporary tables, locks, the client's identity.
// A weight's `exit` exit path is not taken: the process does not exit.
class PooledBackend {
 public:
  static absl::StatusOr<std::unique_ptr<PooledBackend>> Build(const BackendEnvironment& env);
  virtual ~PooledBackend() = default;
  // One connection on client_fd, received when the backend's counters
  // (SampleThread) read `received`. Returns the first error; the record
  // says how far it got, and its exit_* counters are set at the end.
  virtual absl::Status Serve(int client_fd, const ResourceSample& received, BackendRecord& record) = 0;
  // What the structures hold now (after a reset: nothing). HeldPins scans
  // a flat table: not for a timed path.
  virtual size_t HeldPins() const = 0;
  virtual size_t CacheEntries() const = 0;
};

// The protocol's bytes: the backend's "ready", the client's "terminate";
// with queries, the client's query and the backend's answer.
inline constexpr char kReadyByte = 'R';
inline constexpr char kTerminateByte = 'X';
inline constexpr char kQueryByte = 'Q';
inline constexpr char kAnswerByte = 'D';

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_BACKEND_H_
