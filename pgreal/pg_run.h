// The experiment of `backendlab pg`: connect/disconnect loops against real
// PostgreSQL servers (one per version × shared_buffers, started by the tool,
// or one given by --conninfo), interleaved over rounds, with the client's
// figures and the server's per connection.
#ifndef BACKENDLAB_PGREAL_PG_RUN_H_
#define BACKENDLAB_PGREAL_PG_RUN_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pgreal/connect_loop.h"
#include "base/interleaved.h"
#include "base/processes.h"
#include "base/scheduling.h"
#include "base/server_usage.h"
#include "pgreal/huge_pages.h"
#include "pgreal/installation.h"
#include "pgreal/many_connections.h"
#include "pgreal/pg_stats.h"
#include "pgreal/pooler.h"
#include "pgreal/server.h"
#include "pgreal/server_profile.h"
#include "pgreal/setup_durations.h"
#include "pgreal/target_key.h"
#include "pgreal/what_if.h"
#include "profiling/perf_events.h"

namespace backendlab::pgreal {

// The server-side events perf counts, inherited by every backend: CPU,
// context switches and system calls of ServerUsage (faults come from /proc).
inline constexpr profiling::PerfEvent kServerEvents[] = {
    profiling::PerfEvent::kTaskClock, profiling::PerfEvent::kContextSwitches, profiling::PerfEvent::kSyscalls};

struct PgRunOptions {
  // Connections in flight: a target per server (and pooler) × entry, in
  // order (`--clients=1,4`: conn/s at one client and at saturation); empty:
  // loop.clients alone.
  std::vector<int> clients;
  // Rounds: at most `rounds`, in orders shuffled under `seed`, ended sooner
  // once every `vs base` ratio is decided (and within `precision` where
  // asked: base/interleaved.h's RunUntilDecided), a row leaving them once
  // its ratios are; with none (one server, at each clients its own
  // baseline) only max_time can end them sooner. `same_within`: the
  // `same` band (RatioRule); 0: none.
  uint64_t seed = kDefaultOrderSeed;
  Precision precision;
  double same_within = 0;
  // Each server's start randomised (ServerOptions::start_seed, from `seed`
  // and the server's place): base/start_layout.h's kRandomisedAtExec. A
  // server starts once per run, so this varies what a start fixes between
  // runs, not between rounds.
  bool randomise = false;
  // How the client, the servers and their backends are scheduled
  // (base/scheduling.h): RunPg holds it from before the servers start to
  // after they stop.
  Scheduling scheduling = Scheduling::kNormal;
  // Servers the tool starts: every installation × every shared_buffers.
  std::vector<Installation> installations;
  std::vector<int64_t> shared_buffers;
  ServerOptions server;  // run_as, tcp, overrides, keep; the rest is set per server
  // Or an existing server: no start, no stop.
  std::string conninfo;
  pid_t postmaster_pid = 0;  // for server-side figures of an existing server; 0: none

  LoopOptions loop;  // conninfo is set per server
  int64_t rounds = 3;
  // perf_event_open counters on the postmaster, inherited by every backend it
  // forks during the run (off: to measure what counting costs).
  bool server_counters = true;
  // System calls of the server counted by kind (syscalls:sys_enter_<name>
  // tracepoints, inherited like the counters above), as the kernel spells
  // them; empty: none. Names without a tracepoint are InvalidArgument.
  std::vector<std::string> server_syscall_kinds;
  // --profile: after the rounds, two more loops per server: one unrecorded,
  // then one recorded by each profiler named (both: the same pass recorded
  // by both); their conn/s side by side are what the recording cost. perf:
  // ProfileServer, system-wide, kept to the server's processes. builtin: the
  // sampler library, loaded into every server at its start (so the rounds
  // and the unrecorded pass run with it loaded, its gate closed), recorded
  // by BuiltinRecording. Empty: no profile. `major` is set per server;
  // profile_options.frequency_hz is both profilers' rate.
  std::vector<Profiler> profilers;
  ServerProfileOptions profile_options;
  // Each server also measured through a pooler per entry (--via), as a
  // target of its own, interleaved with the direct one; `pgbouncer` is the
  // binary's path ("" for FindPgBouncer's search).
  std::vector<Via> via;
  std::string pgbouncer;
  // --what-if: each server (installation x shared_buffers) also started
  // with each change (pgreal/what_if.h), a server of its own from a copy of
  // the same data directory, with a direct row per clients entry beside the
  // stock server's, in the same rounds.
  std::vector<WhatIf> what_ifs;
  // Connections held open while each loop runs (--hold): a target per
  // entry; before each loop (and each --profile pass) the tool opens that
  // many idle connections (HeldConnections, `hold_in_flight` at a time:
  // 0 means SaturationClients()) and keeps them, so that many backends live
  // beside the loop's; after it, closes them and waits for their backends to
  // be reaped. Empty: none held. The server's max_connections must make
  // room (ServerOptions).
  std::vector<int64_t> hold;
  int hold_in_flight = 0;
  // How the clients reach each server the tool starts: a target per entry
  // (--tcp: unix and tcp; --ssl: and tcp+ssl), the first the baseline of the
  // others. A pooled row goes through the Unix socket only. server.tcp and
  // server.ssl must allow each.
  std::vector<Transport> transports = {Transport::kUnix};
  // The server's own clock: beside each stock server of 18 or later a
  // setup-durations one (log_connections=setup_durations), whose log gives
  // every measured connection's set-up as the server times it, and whose
  // ratio to the stock row is what that logging costs (pg: on by default).
  bool server_clock = false;
  // An A/A check: beside each stock server, a second one started from a
  // copy of the same data directory (key.copy 1, "#2"), with a direct row
  // per transport, clients and hold, compared with its original: two copies
  // of one configuration must come out `~`.
  bool aa = false;
  std::function<void(const std::string&)> progress;
};

// One server's figures over the rounds.
struct PgTargetResult {
  TargetKey key;       // what makes it this row
  std::string label;   // key.Label(the run's LabelShows)
  // Per round, with connections held (key.hold): the time to open them (ms)
  // and their backends' memory, each field the median over those backends
  // (base/processes.h; none in a round where /proc could not be read for
  // every one).
  std::vector<double> hold_open_ms;
  std::vector<ProcessMemory> held_memory;
  Installation installation;  // the server's programs, version and build (key.bindir's)
  Settings settings;          // as passed to the server
  std::string kept_directory;        // with ServerOptions::keep: where the server's directory was left
  std::vector<double> rates;         // conn/s, one per round
  // The client's side, one per round: the tool's CPU per measured
  // connection (libpq's, with SCRAM its key derivation), and the median
  // connect latency, us.
  std::vector<double> client_cpu_us;
  std::vector<double> connect_p50_us;
  // The server's usage in each round (base/server_usage.h), as the mock's:
  // the postmaster and every backend it reaped, over every connection it
  // served while counted (each round's warm-up too: the counters run from
  // before it to after the last backend's exit). CPU, its user/system split
  // and faults from /proc (the kernel's accounting of the postmaster and its
  // reaped children, CPU in clock ticks); task-clock, context switches and
  // system calls from perf (-1 where not counted). One per
  // round, or empty: --conninfo without a postmaster pid, or a round whose
  // /proc figures could not be read.
  std::vector<ServerUsage> server_rounds;
  LoopResult loop;  // histograms merged; connections, wall and client usage summed
  // Why perf could not count an event of the server, one line each.
  std::vector<std::string> server_events_unavailable;
  // PgRunOptions::server_syscall_kinds: the order of each round's
  // syscalls_by_kind; why they could not be counted, if they could not.
  std::vector<std::string> server_syscall_kinds;
  std::string server_syscalls_unavailable;
  // Through a pooler: the server's backends forked for it (new children of
  // the postmaster alive at each loop's end, before the pooler is told to
  // drop its server connections), summed over the rounds; -1 when direct
  // (one backend per connection, by PostgreSQL's design). And the pooler's
  // own CPU (/proc/PID/stat).
  int64_t server_backends = -1;
  bool pooler_available = false;
  int64_t pooler_cpu_ns = 0;
  // --profile: an unrecorded pass and the recorded one right after it, their
  // conn/s (no counters open in either), and the recorded pass's profiles,
  // one per profiler in the order of PgRunOptions::profilers.
  std::vector<ServerProfile> profiles;
  double unrecorded_rate = 0;
  double profiled_rate = 0;
  // A server that times its own set-up (18+, log_connections holding
  // setup_durations): each measured connection's "connection ready" line
  // from its log, in the order logged (each round's warm-up lines left
  // out), and how many measured connections had none.
  bool logs_setup = false;
  std::vector<SetupDurations> setup;
  int64_t setup_missing = 0;
};

struct PgResult {
  std::vector<PgTargetResult> targets;
  LabelShows shows;               // what the rows' labels show beside their server
  PreciseRun run;                 // how the rounds ended
  SchedulingOutcome scheduling;   // what the run was scheduled at (PgRunOptions::scheduling)
  bool compared = false;          // some target has a baseline other than itself: there are ratios
  std::vector<ServerStats> stats;  // RunPg: ComputePgStats of the targets, once the rounds ended
  std::vector<ClientStats> client_stats;  // RunPg: ComputeClientStats
  std::vector<ServerClock> clocks;  // RunPg: ComputeServerClocks, one per target
  std::vector<ProfileChange> profile_changes;  // RunPg: ComputeProfileChanges
  std::vector<HoldStats> holds;     // RunPg: ComputeHoldStats, one per target
  SaturationReport saturation;      // RunPg: ComputeSaturation over the CPUs allowed
  double worst_half_width = 0;   // of every `vs base` ratio at the end (base/server_usage.h's WorstHalfWidth)
  RatioRule rule;                 // every interval's level (over the run's looks) and the `same` band
  std::vector<UndecidedRatio> undecided;  // the `vs base` cost and rate ratios left ~
  std::string server_figures_note;  // why server-side figures are missing, if they are
  // What the run found of an earlier run's change to the host and undid
  // (a killed run's vm.nr_hugepages), one line; empty if nothing.
  std::string restored;
  int64_t huge_pages_added = 0;  // vm.nr_hugepages grown by this much for the run
  // What the run's end did with it (HugePageReservation::released()): put
  // back, or left as someone else set it meanwhile; one line, empty if nothing.
  std::string huge_pages_released;
};

// The servers measured beside another experiment's rounds (`compare
// --with-pg`): the default installation's (Debian's 15) at each
// shared_buffers, a target per clients entry (max_connections room for the
// most), with `loop`'s connections and warm-up, at most `rounds`.
// InvalidArgument: no sizes or no clients. Not found: DefaultInstallation's
// error.
absl::StatusOr<PgRunOptions> ServersBeside(std::span<const int64_t> shared_buffers, std::span<const int> clients,
                                           const LoopOptions& loop, int64_t rounds);

// Start, options.rounds interleaved rounds (base/interleaved.h), --profile's
// pass, Finish. Bad options are InvalidArgument; a server that cannot start
// or dies, or a connection that fails, is an error with what the server
// logged; Cancelled on a stop request. Every server is stopped and removed
// on every path.
absl::StatusOr<PgResult> RunPg(const PgRunOptions& options);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_PG_RUN_H_
