// Servers started in a row, measured in rounds of shuffled order, stopped on every path.
#include "pgreal/pg_run.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <functional>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/cpus.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "base/processes.h"
#include "base/resource_usage.h"
#include "pgreal/internal/processes.h"
#include "pgreal/phase_rules.h"
#include "profiling/perf_events.h"
#include "profiling/perf_record.h"

namespace backendlab::pgreal {
namespace {

// How long the backends of a loop may take to exit after its last
// connection closed (milliseconds each, seconds on a loaded machine).
constexpr int64_t kBackendExitTimeoutNs = 60'000'000'000;
// How long a failed connection waits for the server's or the pooler's
// death in progress before it is called a connection failure.
constexpr int64_t kDeathGraceNs = 1'000'000'000;

std::string SizeLabel(int64_t bytes) {
  if (bytes % (1LL << 30) == 0) return absl::StrCat(bytes >> 30, "GB");
  return absl::StrCat(bytes >> 20, "MB");
}

// Waits until the postmaster has no more children than `baseline` (its
// auxiliary processes): every backend of the loop has exited and been reaped,
// so its counts have joined the postmaster's. Counts read before that would
// miss the backends still there: an error after kBackendExitTimeoutNs,
// never a silent undercount.
absl::Status WaitForBackendsToExit(pid_t postmaster, size_t baseline) {
  const int64_t end = NowNs() + kBackendExitTimeoutNs;
  for (;;) {
    // A look at every process in /proc: with thousands held, milliseconds,
    // so the waits between looks grow with it (the tool's looking must not
    // take a core from the exiting backends).
    const int64_t look_start = NowNs();
    const size_t alive = ChildrenOf(postmaster).size();
    const int64_t look_ns = NowNs() - look_start;
    if (alive <= baseline) break;
    if (StopRequested()) return StoppedStatus();
    if (NowNs() > end) {
      return absl::InternalError(absl::StrCat(alive - baseline, " backend(s) of the server had not exited ",
                                              kBackendExitTimeoutNs / 1'000'000'000,
                                              " s after the loop's last connection closed: its counts would miss them"));
    }
    usleep(static_cast<useconds_t>(std::max<int64_t>(2'000, 4 * look_ns / 1000)));
  }
  return absl::OkStatus();
}

// The connections a target holds beside one loop (PgRunOptions::hold): open
// (timed) before it, their backends' memory read once they are; closed by
// Release after it, their backends waited for, so that the next loop starts
// with none.
class Hold {
 public:
  // Nothing held when target.hold is 0. `record`: keep the open time and
  // the memory in the target (a measured round's, not --profile's).
  static absl::StatusOr<Hold> Open(const PgRunOptions& options, const std::string& conninfo, pid_t postmaster,
                                   PgTargetResult& target, bool record) {
    Hold hold;
    hold.postmaster_ = postmaster;
    if (target.hold == 0) return hold;
    hold.before_ = postmaster > 0 ? ChildrenOf(postmaster).size() : 0;
    std::function<void(int64_t)> progress;
    if (options.progress) {
      progress = [&](int64_t open) {
        options.progress(absl::StrCat("holding ", open, " of ", target.hold, " connections for ", target.label));
      };
    }
    const int in_flight = options.hold_in_flight > 0 ? options.hold_in_flight : SaturationClients();
    absl::StatusOr<HeldConnections> held = HeldConnections::Open(conninfo, target.hold, in_flight, progress);
    if (!held.ok()) return absl::Status(held.status().code(), absl::StrCat("--hold: ", held.status().message()));
    hold.held_ = std::move(*held);
    if (record) {
      target.hold_open_ms.push_back(static_cast<double>(hold.held_.open_ns()) / 1e6);
      // Each round's median held backend; a round that could not read one
      // leaves the rounds without memory for good (ComputeHoldStats). Only
      // of a server known to run here (an existing one's backend pids may
      // name processes of another host).
      if (const std::optional<ProcessMemory> m =
              postmaster > 0 ? MedianProcessMemory(hold.held_.BackendPids()) : std::nullopt) {
        target.held_memory.push_back(*m);
      }
    }
    return hold;
  }

  // After the loop: OK while every held connection is open (else the
  // server's closing of them is the error), then closes them and waits for
  // their backends.
  absl::Status Release() {
    if (held_.size() == 0) return absl::OkStatus();
    absl::Status open = held_.CheckOpen();
    held_.Close();
    if (!open.ok()) return open;
    return postmaster_ > 0 ? WaitForBackendsToExit(postmaster_, before_) : absl::OkStatus();
  }
  // A failed loop's error, told with what became of the held connections:
  // a server that closed them first is the cause.
  absl::Status Explain(const absl::Status& loop) const {
    if (held_.size() == 0) return loop;
    const absl::Status open = held_.CheckOpen();
    return open.ok() ? loop : absl::Status(open.code(), absl::StrCat(open.message(), "; then: ", loop.message()));
  }

 private:
  pid_t postmaster_ = 0;
  size_t before_ = 0;  // the postmaster's children before the hold
  HeldConnections held_;
};

// The server's usage over one loop: made before it, End after its backends
// have exited.
class RoundCounters {
 public:
  RoundCounters(const PgRunOptions& options, pid_t postmaster, PgTargetResult& target)
      : postmaster_(postmaster), counting_events_(options.server_counters),
        syscalls_unasked_(options.server_syscall_kinds.empty()) {
    if (!options.server_syscall_kinds.empty()) {
      const std::vector<std::string_view> names(options.server_syscall_kinds.begin(), options.server_syscall_kinds.end());
      absl::StatusOr<profiling::SyscallCounters> opened = profiling::SyscallCounters::OpenProcess(postmaster, names);
      if (opened.ok()) {
        syscalls_ = *std::move(opened);
        counting_calls_ = syscalls_.Read(calls_before_);
      } else {
        target.server_syscalls_unavailable = std::string(opened.status().message());
      }
    }
    if (counting_events_) {
      counters_ = profiling::PerfCounters::OpenProcess(postmaster, kServerEvents);
      target.server_events_unavailable.clear();
      for (const absl::Status& why : counters_.Unavailable()) target.server_events_unavailable.emplace_back(why.message());
      counters_.ReadAll(profiling::PerfCounters::PhaseEdge::kBegin, before_);
    }
    proc_before_ = internal::ReadProcessTotals(postmaster);
  }

  // The round's usage over `connections`; none if /proc could not be read.
  std::optional<ServerUsage> End(int64_t connections) {
    if (counting_events_) counters_.ReadAll(profiling::PerfCounters::PhaseEdge::kEnd, after_);
    profiling::SyscallCounters::Counts calls_after;
    const bool calls = counting_calls_ && syscalls_.Read(calls_after);
    const std::optional<internal::ProcessTotals> proc_after = internal::ReadProcessTotals(postmaster_);
    if (!proc_before_ || !proc_after) return std::nullopt;
    ServerUsage u;
    u.connections = connections;
    u.cpu_ns = proc_after->cpu_ns - proc_before_->cpu_ns;
    u.user_ns = proc_after->user_ns - proc_before_->user_ns;
    u.system_ns = proc_after->system_ns - proc_before_->system_ns;
    u.minor_faults = proc_after->minor_faults - proc_before_->minor_faults;
    u.major_faults = proc_after->major_faults - proc_before_->major_faults;
    if (proc_before_->own_cpu_ns >= 0 && proc_after->own_cpu_ns >= 0) {
      u.postmaster_cpu_ns = proc_after->own_cpu_ns - proc_before_->own_cpu_ns;
    }
    u.task_clock_ns = Counted(profiling::PerfEvent::kTaskClock);
    u.context_switches = Counted(profiling::PerfEvent::kContextSwitches);
    if (calls) {
      const profiling::SyscallCounters::Counts round = syscalls_.Between(calls_before_, calls_after);
      u.syscalls = round.total;
      u.syscalls_by_kind = round.by_kind;
    } else if (syscalls_unasked_) {
      u.syscalls = Counted(profiling::PerfEvent::kSyscalls);
    }
    return u;
  }

 private:
  int64_t Counted(profiling::PerfEvent e) const {
    for (size_t i = 0; i < std::size(kServerEvents); ++i) {
      if (kServerEvents[i] == e && before_[i] >= 0 && after_[i] >= 0) return after_[i] - before_[i];
    }
    return -1;
  }

  pid_t postmaster_;
  bool counting_events_;
  bool syscalls_unasked_;  // no kinds asked for: every call from perf's count
  profiling::PerfCounters counters_;
  std::vector<int64_t> before_ = std::vector<int64_t>(std::size(kServerEvents), -1);
  std::vector<int64_t> after_ = std::vector<int64_t>(std::size(kServerEvents), -1);
  profiling::SyscallCounters syscalls_;
  profiling::SyscallCounters::Counts calls_before_;
  bool counting_calls_ = false;
  std::optional<internal::ProcessTotals> proc_before_;
};

// One measured loop against one server, its figures added to `target`.
absl::Status MeasureOnce(const PgRunOptions& options, const std::string& conninfo, const std::string& hold_conninfo,
                         pid_t postmaster, Pooler* pooler, PgTargetResult& target) {
  LoopOptions loop = options.loop;
  loop.conninfo = conninfo;
  loop.clients = target.clients;
  target.server_syscall_kinds = options.server_syscall_kinds;
  // Held before the counters open: the held backends' own lives are no
  // connection of the loop's (perf's inherited counters see only children
  // forked after they open, /proc only children reaped).
  absl::StatusOr<Hold> hold = Hold::Open(options, hold_conninfo, postmaster, target, /*record=*/true);
  if (!hold.ok()) return hold.status();
  size_t baseline = 0;
  std::optional<RoundCounters> counters;
  if (postmaster > 0) {
    baseline = ChildrenOf(postmaster).size();
    counters.emplace(options, postmaster, target);
  }
  const std::optional<internal::ProcessTotals> pooler_before =
      pooler != nullptr ? internal::ReadProcessTotals(pooler->pid()) : std::nullopt;
  absl::StatusOr<LoopResult> result = RunConnectLoop(loop);
  if (!result.ok()) return hold->Explain(result.status());
  if (pooler != nullptr) {
    const std::optional<internal::ProcessTotals> pooler_after = internal::ReadProcessTotals(pooler->pid());
    // Available only if every round could read it.
    const bool available = pooler_before && pooler_after && (target.rates.empty() || target.pooler_available);
    target.pooler_available = available;
    if (available) target.pooler_cpu_ns += pooler_after->cpu_ns - pooler_before->cpu_ns;
    // The pooled backends live on between clients: counted now, then let go
    // so that their counts join the postmaster's before they are read.
    const size_t alive = ChildrenOf(postmaster).size();
    target.server_backends = std::max<int64_t>(target.server_backends, 0) +
                             static_cast<int64_t>(alive > baseline ? alive - baseline : 0);
    if (absl::Status s = pooler->CloseServerConnections(); !s.ok()) return s;
  }
  std::optional<ServerUsage> usage;
  if (counters) {
    if (absl::Status s = WaitForBackendsToExit(postmaster, baseline); !s.ok()) return s;
    usage = counters->End(result->connections + loop.warmup);
  }
  if (absl::Status s = hold->Release(); !s.ok()) return s;
  // One usage per round, or none: a round that could not be read leaves
  // the rounds empty for good.
  if (usage && target.server_rounds.size() == target.rates.size()) {
    target.server_rounds.push_back(*std::move(usage));
  } else {
    target.server_rounds.clear();
  }
  target.rates.push_back(result->connections_per_second());
  const double measured = static_cast<double>(std::max<int64_t>(result->connections, 1));
  target.client_cpu_us.push_back(static_cast<double>(result->client.cpu_ns) / 1e3 / measured);
  target.connect_p50_us.push_back(result->connect_ns.Summarize(1e-3).median);
  target.loop.connect_ns.Merge(result->connect_ns);
  target.loop.connection_ns.Merge(result->connection_ns);
  target.loop.connections += result->connections;
  target.loop.wall_ns += result->wall_ns;
  target.loop.client = {target.loop.client.wall_ns + result->client.wall_ns,
                        target.loop.client.cpu_ns + result->client.cpu_ns,
                        target.loop.client.minor_faults + result->client.minor_faults,
                        target.loop.client.major_faults + result->client.major_faults};
  return absl::OkStatus();
}

// Whether a server of `major` with these settings logs each connection's
// set-up durations (18+: log_connections holding setup_durations or all).
bool LogsSetup(int major, const Settings& settings) {
  if (major < 18) return false;
  for (const auto& [name, value] : settings) {
    if (name == "log_connections") {
      return value.find("setup_durations") != std::string::npos || value.find("all") != std::string::npos;
    }
  }
  return false;
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// The "connection ready" lines the log gained since `offset` (moved past
// them), the first `warmup` of them (the round's warm-up connections come
// first) left out, up to `measured` kept; the measured ones without a line
// are counted in `missing`.
void ReadSetupLines(const std::string& log, int64_t& offset, int64_t warmup, int64_t measured,
                    std::vector<SetupDurations>& setup, int64_t& missing) {
  std::ifstream in(log);
  in.seekg(offset);
  std::string line;
  int64_t seen = 0;
  int64_t kept = 0;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written: read next time
    offset += static_cast<int64_t>(line.size()) + 1;
    const std::optional<SetupDurations> d = ParseSetupDurations(line);
    if (!d || seen++ < warmup || kept >= measured) continue;
    setup.push_back(*d);
    ++kept;
  }
  missing += measured - kept;
}

bool Uses(const PgRunOptions& options, Profiler profiler) {
  return std::find(options.profilers.begin(), options.profilers.end(), profiler) != options.profilers.end();
}

// --profile's pair of passes: the same loop unrecorded, then recorded, with
// no counters open, so that the two rates side by side are what recording
// cost. Each pass waits for its backends to be reaped, so the recording
// holds their exit, teardown and reap. With both profilers the one recorded
// pass is both's: perf's recording around the built-in sampler's gate.
// `sample_file`: the server's, for builtin.
absl::Status ProfileOnce(const PgRunOptions& options, const std::string& conninfo, const std::string& hold_conninfo,
                         pid_t postmaster, int major, profiling::SampleFile* sample_file, PgTargetResult& target) {
  LoopOptions loop = options.loop;
  loop.conninfo = conninfo;
  loop.clients = target.clients;
  // Both passes beside the held connections, as the rounds ran; the
  // recording holds none of their start-ups, which came before it.
  absl::StatusOr<Hold> hold = Hold::Open(options, hold_conninfo, postmaster, target, /*record=*/false);
  if (!hold.ok()) return hold.status();
  const size_t baseline = ChildrenOf(postmaster).size();
  absl::StatusOr<LoopResult> plain = RunConnectLoop(loop);
  if (!plain.ok()) return hold->Explain(plain.status());
  if (absl::Status s = WaitForBackendsToExit(postmaster, baseline); !s.ok()) return s;
  double rate = 0;
  std::function<absl::Status()> pass = [&]() -> absl::Status {
    absl::StatusOr<LoopResult> result = RunConnectLoop(loop);
    if (!result.ok()) return result.status();
    if (absl::Status s = WaitForBackendsToExit(postmaster, baseline); !s.ok()) return s;
    rate = result->connections_per_second();
    return absl::OkStatus();
  };
  std::optional<BuiltinRecording> builtin;
  if (Uses(options, Profiler::kBuiltin)) {
    builtin.emplace(postmaster, *sample_file, major);
    pass = [&builtin, loop_pass = pass] { return builtin->Record(loop_pass); };
  }
  std::optional<ServerProfile> perf;
  if (Uses(options, Profiler::kPerf)) {
    ServerProfileOptions profile_options = options.profile_options;
    profile_options.major = major;
    absl::StatusOr<ServerProfile> profile = ProfileServer(postmaster, profile_options, pass);
    if (!profile.ok()) return profile.status();
    if (profile->server_samples == 0) {
      return absl::InternalError(absl::StrCat("perf recorded no sample of process ", postmaster,
                                              " or its children: is it the server's postmaster?"));
    }
    perf = std::move(*profile);
  } else if (absl::Status s = pass(); !s.ok()) {
    return s;
  }
  std::optional<ServerProfile> sampled;
  if (builtin) {
    absl::StatusOr<ServerProfile> profile = builtin->Profile();
    if (!profile.ok()) return profile.status();
    if (profile->server_samples == 0) {
      return absl::InternalError(absl::StrCat(
          "the built-in sampler recorded no sample of the server (", profile->backends_forked,
          " processes forked meanwhile, ", profile->unarmed_processes, " of them without a timer)"));
    }
    sampled = std::move(*profile);
  }
  target.profiles.clear();
  for (Profiler p : options.profilers) target.profiles.push_back(std::move(p == Profiler::kPerf ? *perf : *sampled));
  target.unrecorded_rate = plain->connections_per_second();
  target.profiled_rate = rate;
  return hold->Release();
}

// The transports asked for: each once, each one the servers will offer.
absl::Status CheckTransports(const PgRunOptions& options) {
  if (options.transports.empty()) return absl::InvalidArgumentError("no transport to connect through");
  for (size_t i = 0; i < options.transports.size(); ++i) {
    const Transport t = options.transports[i];
    if (std::find(options.transports.begin(), options.transports.begin() + static_cast<ptrdiff_t>(i), t) !=
        options.transports.begin() + static_cast<ptrdiff_t>(i)) {
      return absl::InvalidArgumentError(absl::StrCat("transport ", std::string(TransportName(t)), " given twice"));
    }
    if (t == Transport::kUnix) continue;
    if (!options.conninfo.empty()) {
      return absl::InvalidArgumentError("--conninfo names its own way to the server: no transport of the tool's");
    }
    if (!options.server.tcp || (t == Transport::kSsl && !options.server.ssl)) {
      return absl::InvalidArgumentError(absl::StrCat("transport ", std::string(TransportName(t)), " needs a server with ",
                                                     t == Transport::kSsl ? "tcp and ssl" : "tcp"));
    }
  }
  return absl::OkStatus();
}

int64_t MostHeld(const PgRunOptions& options) {
  return options.hold.empty() ? 0 : *std::max_element(options.hold.begin(), options.hold.end());
}

// What holding the most connections asked for needs of the host, checked
// before anything starts (base/processes.h): descriptors for them and
// the clients in this process; processes for their backends, the clients'
// and each server's own; memory for the held backends (their servers'
// shared memory: CheckHoldMemory, once the data directories exist).
absl::Status CheckHold(const PgRunOptions& options, const std::vector<int>& sweep) {
  for (size_t i = 0; i < options.hold.size(); ++i) {
    if (options.hold[i] < 0) return absl::InvalidArgumentError("--hold must be >= 0");
    for (size_t j = 0; j < i; ++j) {
      if (options.hold[j] == options.hold[i]) {
        return absl::InvalidArgumentError(absl::StrCat("--hold: ", options.hold[i], " given twice"));
      }
    }
  }
  const int64_t most = MostHeld(options);
  if (most == 0) return absl::OkStatus();
  const int most_clients = *std::max_element(sweep.begin(), sweep.end());
  if (options.conninfo.empty() && options.server.max_connections < most + most_clients) {
    return absl::InvalidArgumentError(absl::StrCat("max_connections ", options.server.max_connections, " leaves no room for ",
                                                   most, " held connections and ", most_clients, " clients"));
  }
  HostNeeds needs;
  needs.what = absl::StrCat("--hold=", most);
  // Each held and each client connection is a socket here; libpq, perf's
  // counters and the logs take a few dozen more.
  needs.descriptors = most + most_clients + 64;
  if (options.conninfo.empty()) {
    // Each server's own processes (checkpointer, walwriter, ...): a handful.
    const int64_t servers = static_cast<int64_t>(options.installations.size() * options.shared_buffers.size() *
                                                 (options.what_ifs.size() + 2));
    needs.processes = most + most_clients + 8 * servers;
    needs.uid = geteuid();
    if (needs.uid == 0) {
      absl::StatusOr<internal::User> user = internal::LookUpUser(options.server.run_as);
      if (!user.ok()) return user.status();
      needs.uid = user->uid;
    }
    needs.memory_bytes = most * kHeldBackendBytes;
  }
  return CheckHostLimits(needs);
}

// The memory of the held backends and of every server's shared memory
// (all run at once; 15+ say how much), before any postmaster starts.
absl::Status CheckHoldMemory(const PgRunOptions& options, const std::vector<std::unique_ptr<Server>>& servers) {
  const int64_t most = MostHeld(options);
  if (most == 0) return absl::OkStatus();
  int64_t shared = 0;
  for (const std::unique_ptr<Server>& server : servers) {
    absl::StatusOr<int64_t> bytes = server->SharedMemoryBytes();
    if (!bytes.ok()) return bytes.status();
    shared += *bytes;
  }
  HostNeeds needs;
  needs.what = absl::StrCat("--hold=", most, " with the servers' shared memory (", shared >> 20, " MiB)");
  needs.memory_bytes = most * kHeldBackendBytes + shared;
  return CheckHostLimits(needs);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgServers>> PgServers::Start(const PgRunOptions& options) {
  if (options.rounds < 1) return absl::InvalidArgumentError("--rounds must be at least 1");
  if (options.loop.clients < 1 || options.loop.clients > kMaxClients) {
    return absl::InvalidArgumentError(absl::StrCat("--clients must be 1..", kMaxClients));
  }
  for (int c : options.clients) {
    if (c < 1 || c > kMaxClients) return absl::InvalidArgumentError(absl::StrCat("--clients must be 1..", kMaxClients));
  }
  const std::vector<int> sweep = options.clients.empty() ? std::vector<int>{options.loop.clients} : options.clients;
  auto with_clients = [&](std::string label, int c) {
    return sweep.size() > 1 ? absl::StrCat(label, " ", c, c == 1 ? " client" : " clients") : label;
  };
  const std::vector<int64_t> holds = options.hold.empty() ? std::vector<int64_t>{0} : options.hold;
  auto with_hold = [&](std::string label, int64_t n) {
    return options.hold.empty() ? label : absl::StrCat(label, " hold ", n);
  };
  if (absl::Status s = CheckTransports(options); !s.ok()) return s;
  if (absl::Status s = CheckHold(options, sweep); !s.ok()) return s;
  // builtin first: with --conninfo no --postmaster-pid would make it possible.
  if (Uses(options, Profiler::kBuiltin) && !options.conninfo.empty()) {
    return absl::InvalidArgumentError(
        "--profile=builtin loads the sampler library into a server the tool starts; --conninfo names an existing one");
  }
  if (!options.profilers.empty() && !options.conninfo.empty() && options.postmaster_pid <= 0) {
    return absl::InvalidArgumentError("--profile of an existing server needs its --postmaster-pid");
  }
  if (Uses(options, Profiler::kPerf)) {
    if (absl::Status s = profiling::SystemWideRecordingAvailable(); !s.ok()) return s;
  }
  // Where the kernel counts system calls at all, a name it has no
  // tracepoint for is a mistake; where it does not, every round says why.
  if (profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls).ok()) {
    for (const std::string& kind : options.server_syscall_kinds) {
      if (!profiling::HasSyscallTracepoint(kind)) {
        return absl::InvalidArgumentError(absl::StrCat("no system call ", kind, " to count (no tracepoint syscalls:sys_enter_", kind, ")"));
      }
    }
  }
  if (!options.what_ifs.empty() && !options.conninfo.empty()) {
    return absl::InvalidArgumentError(
        "--what-if changes a server the tool starts; --conninfo names an existing one, which it must not change");
  }
  std::string pgbouncer;
  if (!options.via.empty()) {
    if (!options.conninfo.empty()) {
      return absl::InvalidArgumentError(
          "--via puts a pooler in front of a server the tool starts; for an existing pooler, give its --conninfo");
    }
    if (options.server.tcp) {
      // The direct rows would pay TCP and a password, the pooled ones a
      // Unix socket and trust: not a comparison.
      return absl::InvalidArgumentError("--via goes through Unix sockets only; it does not combine with --tcp");
    }
    absl::StatusOr<std::string> found = FindPgBouncer(options.pgbouncer);
    if (!found.ok()) return found.status();
    pgbouncer = *found;
  }
  if (options.conninfo.empty()) {
    // The deepest socket of the run: a pooler's, in its directory inside the server's.
    if (absl::Status s = CheckSocketRoom(options.via.empty() ? "" : PoolerSocketDirectorySuffix()); !s.ok()) return s;
  }
  std::unique_ptr<PgServers> run(new PgServers(options));
  PgResult& result = run->result_;
  // A killed run's change to the host, undone before this run makes its own.
  result.restored = RestoreHugePagesOfEndedRun();
  if (!options.conninfo.empty()) {
    for (int c : sweep) {
      for (int64_t n : holds) {
        PgTargetResult target;
        target.label = with_hold(with_clients("conninfo", c), n);
        target.series = with_hold("conninfo", n);
        target.clients = c;
        target.hold = n;
        target.installation.build = "an existing server (--conninfo)";
        result.targets.push_back(std::move(target));
      }
    }
    if (options.postmaster_pid <= 0) {
      result.server_figures_note = "not available: the server was not started by the tool; give --postmaster-pid";
    }
    return run;
  }
  // Data directories first, one initdb per installation and copies of it,
  // then the postmasters: a running server's directory is no template. On an
  // error the destructor stops and removes what was made.
  for (const Installation& installation : options.installations) {
    // The changes each of its servers is also started with.
    std::vector<WhatIf> variants = options.what_ifs;
    const bool clock_asked = std::any_of(variants.begin(), variants.end(),
                                         [](const WhatIf& w) { return w.kind == WhatIfKind::kSetupDurations; });
    if (options.server_clock && installation.major >= 18 && !clock_asked) {
      variants.push_back(WhatIf{WhatIfKind::kSetupDurations, ""});
    }
    std::string template_data;
    for (int64_t size : options.shared_buffers) {
      for (size_t w = 0; w <= variants.size(); ++w) {
        ServerOptions server = options.server;
        server.installation = installation;
        server.shared_buffers_bytes = size;
        if (Uses(options, Profiler::kBuiltin)) server.builtin_sampler_hz = options.profile_options.frequency_hz;
        if (w > 0) {
          if (absl::Status s = ApplyWhatIf(variants[w - 1], server); !s.ok()) return s;
        }
        if (options.progress) {
          options.progress(absl::StrCat(template_data.empty() ? "initdb" : "copying", " for PostgreSQL ",
                                        installation.major, " at ", SizeLabel(size),
                                        w > 0 ? absl::StrCat(" +", server.what_if) : std::string()));
        }
        absl::StatusOr<std::unique_ptr<Server>> created = Server::Create(server, template_data);
        if (!created.ok()) return created.status();
        if (template_data.empty()) template_data = (*created)->data_directory();
        PgTargetResult target;
        target.label = absl::StrCat(installation.major, "/", SizeLabel(size));
        if (w > 0) target.label = absl::StrCat(target.label, " +", server.what_if);
        target.what_if = server.what_if;
        target.installation = installation;
        target.shared_buffers_bytes = size;
        target.settings = (*created)->settings();
        target.logs_setup = LogsSetup(installation.major, target.settings);
        // A what-if's rows are direct: the change is the server's.
        const size_t vias = w == 0 ? options.via.size() : 0;
        for (size_t v = 0; v <= vias; ++v) {
          // A pooler is reached through its Unix socket alone.
          const size_t transports = v == 0 ? options.transports.size() : 1;
          for (size_t tr = 0; tr < transports; ++tr) {
            for (int c : sweep) {
              for (int64_t n : holds) {
                PgTargetResult t = target;
                if (v > 0) {
                  t.via = options.via[v - 1].label();
                  t.label = absl::StrCat(target.label, " via ", t.via);
                }
                t.transport = options.transports[tr];
                if (t.transport != Transport::kUnix) t.label = absl::StrCat(t.label, " ", std::string(TransportName(t.transport)));
                t.series = with_hold(t.label, n);
                t.label = with_hold(with_clients(t.label, c), n);
                t.clients = c;
                t.hold = n;
                result.targets.push_back(std::move(t));
                run->server_of_.push_back(run->servers_.size());
                run->poolers_.emplace_back();
              }
            }
          }
        }
        run->servers_.push_back(std::move(*created));
      }
    }
  }
  if (absl::Status s = CheckHoldMemory(options, run->servers_); !s.ok()) return s;
  // The huge pages the huge-pages servers will map, reserved before any
  // starts, given back once they have stopped (StopAll).
  int64_t huge_pages = 0;
  for (const std::unique_ptr<Server>& server : run->servers_) {
    if (server->what_if() != "huge-pages") continue;
    absl::StatusOr<int64_t> pages = server->HugePagesNeeded();
    if (!pages.ok()) return pages.status();
    huge_pages += *pages;
  }
  if (huge_pages > 0) {
    if (options.progress) options.progress(absl::StrCat("reserving ", huge_pages, " huge pages"));
    absl::StatusOr<std::unique_ptr<HugePageReservation>> reserved = HugePageReservation::Reserve(huge_pages);
    if (!reserved.ok()) return reserved.status();
    result.huge_pages_added = (*reserved)->added();
    run->huge_pages_ = std::move(*reserved);
  }
  // Each postmaster once (a server has a target per --clients entry), then
  // the poolers.
  for (size_t i = 0; i < result.targets.size(); ++i) {
    if (i > 0 && run->server_of_[i] == run->server_of_[i - 1]) continue;
    if (options.progress) options.progress(absl::StrCat("starting the server for ", result.targets[i].label));
    if (absl::Status s = run->servers_[run->server_of_[i]]->StartPostmaster(); !s.ok()) return s;
  }
  for (size_t i = 0; i < result.targets.size(); ++i) {
    Server& server = *run->servers_[run->server_of_[i]];
    if (result.targets[i].via.empty()) continue;
    if (options.progress) options.progress(absl::StrCat("starting ", result.targets[i].label));
    PoolerOptions pooler;
    absl::StatusOr<Via> via = ParseVia(result.targets[i].via);
    if (!via.ok()) return via.status();
    pooler.via = *via;
    pooler.binary = pgbouncer;
    pooler.directory = absl::StrCat(server.directory(), PoolerSocketDirectorySuffix(via->mode));
    pooler.user = server.user();
    pooler.server_socket_directory = server.directory();
    pooler.server_port = server.port();
    pooler.pool_size = result.targets[i].clients;
    pooler.max_clients = result.targets[i].clients + 10;
    pooler.keep = options.server.keep;
    absl::StatusOr<std::unique_ptr<Pooler>> started = Pooler::Start(pooler);
    if (!started.ok()) return started.status();
    run->poolers_[i] = std::move(*started);
  }
  // Each log read from here on: what the start logged is no measured connection's.
  for (const std::unique_ptr<Server>& server : run->servers_) run->log_offsets_.push_back(FileSize(server->log_path()));
  return run;
}

PgServers::~PgServers() { StopAll().IgnoreError(); }

pid_t PgServers::postmaster_pid(size_t i) const {
  return servers_.empty() ? options_.postmaster_pid : servers_[server_of_[i]]->postmaster_pid();
}

std::string PgServers::data_directory(size_t i) const {
  return servers_.empty() ? std::string() : servers_[server_of_[i]]->data_directory();
}

absl::Status PgServers::Measure(size_t i) {
  PgTargetResult& target = result_.targets[i];
  if (servers_.empty()) {
    return MeasureOnce(options_, options_.conninfo, options_.conninfo, options_.postmaster_pid, nullptr, target);
  }
  Server& server = *servers_[server_of_[i]];
  Pooler* pooler = poolers_[i].get();
  const int64_t measured_before = target.loop.connections;
  absl::Status s = MeasureOnce(options_, pooler != nullptr ? pooler->conninfo() : server.conninfo(target.transport),
                               server.conninfo(target.transport), server.postmaster_pid(), pooler, target);
  if (!s.ok() && !absl::IsCancelled(s)) {
    // A failed connection because the server or the pooler died: say that,
    // with its log. A killed process's sockets close before it can be
    // reaped, so its death may still be under way: a grace to see it.
    const int64_t grace_ns = pooler != nullptr ? 0 : kDeathGraceNs;
    if (absl::Status alive = server.CheckRunning(grace_ns); !alive.ok()) return alive;
    if (pooler != nullptr) {
      if (absl::Status alive = pooler->CheckRunning(kDeathGraceNs); !alive.ok()) return alive;
      return absl::Status(s.code(), absl::StrCat(target.label, ": ", s.message(), "; pgbouncer's log ends:",
                                                 pooler->LogTail(5), "\nthe server's:", server.LogTail(5)));
    }
    return absl::Status(s.code(), absl::StrCat(target.label, ": ", s.message(), server.LogTail(5)));
  }
  if (s.ok()) s = server.CheckRunning();
  // Every pooler, not only this target's: one killed while the direct row
  // ran is reported now, not when its own row comes.
  for (std::unique_ptr<Pooler>& p : poolers_) {
    if (s.ok() && p != nullptr) s = p->CheckRunning();
  }
  if (s.ok() && target.logs_setup) {
    const int64_t measured = target.loop.connections - measured_before;
    ReadSetupLines(server.log_path(), log_offsets_[server_of_[i]], options_.loop.warmup, measured, target.setup,
                   target.setup_missing);
  }
  return s;
}

absl::Status PgServers::Profile(int only_clients) {
  for (size_t i = 0; i < result_.targets.size(); ++i) {
    PgTargetResult& target = result_.targets[i];
    if (only_clients > 0 && target.clients != only_clients) continue;
    if (options_.progress) options_.progress(absl::StrCat("profiling ", target.label));
    if (servers_.empty()) {
      absl::StatusOr<int> major = ServerMajorVersion(options_.conninfo);
      if (!major.ok()) return major.status();
      if (absl::Status s = ProfileOnce(options_, options_.conninfo, options_.conninfo, options_.postmaster_pid, *major,
                                       nullptr, target);
          !s.ok()) {
        return s;
      }
      continue;
    }
    if (!target.via.empty()) continue;  // the server's phases are its direct target's
    Server& server = *servers_[server_of_[i]];
    absl::Status s = ProfileOnce(options_, server.conninfo(target.transport), server.conninfo(target.transport),
                                 server.postmaster_pid(), target.installation.major, server.sample_file(), target);
    // Its connections are no measured round's.
    log_offsets_[server_of_[i]] = FileSize(server.log_path());
    if (s.ok()) {
      s = server.CheckRunning();
    } else if (!absl::IsCancelled(s)) {
      if (absl::Status alive = server.CheckRunning(); !alive.ok()) s = alive;
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status PgServers::StopAll() {
  absl::Status status;
  // The poolers first: their server connections go before the server does.
  for (std::unique_ptr<Pooler>& pooler : poolers_) {
    if (pooler == nullptr) continue;
    absl::Status stopped = pooler->Stop();
    if (status.ok() && !stopped.ok()) status = stopped;
  }
  poolers_.clear();
  for (std::unique_ptr<Server>& server : servers_) {
    absl::Status stopped = server->Stop();
    if (status.ok() && !stopped.ok()) status = stopped;
  }
  for (size_t i = 0; i < server_of_.size() && !servers_.empty(); ++i) {
    result_.targets[i].kept_directory = servers_[server_of_[i]]->kept_directory();
  }
  servers_.clear();
  // Once no server maps them: a pool in use cannot shrink.
  if (huge_pages_ != nullptr) {
    absl::Status released = huge_pages_->Release();
    if (status.ok() && !released.ok()) status = released;
    huge_pages_.reset();
  }
  return status;
}

absl::StatusOr<PgResult> PgServers::Finish() {
  if (absl::Status s = StopAll(); !s.ok()) return s;
  return result_;
}

size_t BaselineOf(std::span<const PgTargetResult> targets, size_t i) {
  const PgTargetResult& t = targets[i];
  const Transport first_transport = targets.front().transport;
  const int64_t first_hold = targets.front().hold;
  auto stock_direct = [&](const PgTargetResult& d) {
    return d.clients == t.clients && d.via.empty() && d.what_if.empty();
  };
  auto same_server = [&](const PgTargetResult& d) {
    return d.installation.bindir == t.installation.bindir && d.shared_buffers_bytes == t.shared_buffers_bytes;
  };
  // The one change this row makes, undone: the row that differs from it in
  // nothing else.
  std::function<bool(const PgTargetResult&)> base;
  if (!t.via.empty() || !t.what_if.empty()) {
    base = [&](const PgTargetResult& d) { return same_server(d) && d.transport == t.transport && d.hold == t.hold; };
  } else if (t.transport != first_transport) {
    base = [&](const PgTargetResult& d) { return same_server(d) && d.transport == first_transport && d.hold == t.hold; };
  } else if (t.hold != first_hold) {
    base = [&](const PgTargetResult& d) { return same_server(d) && d.transport == first_transport && d.hold == first_hold; };
  } else {
    base = [&](const PgTargetResult& d) { return d.transport == first_transport && d.hold == first_hold; };
  }
  for (size_t j = 0; j < targets.size(); ++j) {
    if (stock_direct(targets[j]) && base(targets[j])) return j;
  }
  return i;
}

std::vector<ServerStats> ComputePgStats(std::span<const PgTargetResult> targets) {
  std::vector<MeasuredRounds> rounds;
  for (const PgTargetResult& t : targets) rounds.push_back({t.rates, t.server_rounds});
  std::vector<ServerStats> stats;
  for (size_t i = 0; i < rounds.size(); ++i) stats.push_back(ComputeServerStats(rounds[i], &rounds[BaselineOf(targets, i)]));
  return stats;
}

std::vector<ClientStats> ComputeClientStats(std::span<const PgTargetResult> targets) {
  std::vector<ClientStats> stats;
  for (size_t i = 0; i < targets.size(); ++i) {
    const PgTargetResult& t = targets[i];
    ClientStats c;
    c.cpu_us = MedianWithInterval(t.client_cpu_us);
    c.connect_p50_us = MedianWithInterval(t.connect_p50_us);
    const size_t b = BaselineOf(targets, i);
    if (b == i) {
      c.cpu_vs_baseline = c.connect_vs_baseline = SelfRatio(static_cast<int>(t.rates.size()));
    } else {
      c.cpu_vs_baseline = PairedRatioOfCommonRounds(t.client_cpu_us, targets[b].client_cpu_us, Better::kLower);
      c.connect_vs_baseline = PairedRatioOfCommonRounds(t.connect_p50_us, targets[b].connect_p50_us, Better::kLower);
    }
    stats.push_back(c);
  }
  return stats;
}

std::vector<ServerClock> ComputeServerClocks(std::span<const PgTargetResult> targets,
                                             std::span<const ServerStats> stats) {
  std::vector<ServerClock> clocks;
  for (size_t i = 0; i < targets.size(); ++i) {
    const PgTargetResult& t = targets[i];
    ServerClock c;
    c.timed = t.logs_setup;
    c.connect_ms = t.loop.connect_ns.Summarize(1e-6);
    if (t.logs_setup) {
      c.server = SummarizeSetupDurations(t.setup);
      c.lines = static_cast<int64_t>(t.setup.size());
      c.missing = t.setup_missing;
    }
    if (!t.profiles.empty() && t.profiles[0].server_samples > 0 && i < stats.size() && stats[i].has_cpu) {
      const ServerProfile& p = t.profiles[0];
      auto share_us = [&](std::string_view phase) {
        return stats[i].cpu_us.median * static_cast<double>(p.SamplesIn(phase)) / static_cast<double>(p.server_samples);
      };
      c.fork_cpu_us = share_us("fork");
      // The server's `authentication` spans ClientAuthentication, the
      // password exchange inside it too.
      c.auth_cpu_us = share_us("auth") + share_us("scram");
      c.init_cpu_us = share_us("init");
    }
    clocks.push_back(c);
  }
  return clocks;
}

std::vector<ProfileChange> ComputeProfileChanges(std::span<const PgTargetResult> targets,
                                                 std::span<const ServerStats> stats) {
  std::vector<ProfileChange> changes;
  for (size_t i = 0; i < targets.size(); ++i) {
    const size_t b = BaselineOf(targets, i);
    if (b == i || !targets[i].via.empty()) continue;
    for (const ServerProfile& changed : targets[i].profiles) {
      const auto stock = std::find_if(targets[b].profiles.begin(), targets[b].profiles.end(),
                                      [&](const ServerProfile& p) { return p.profiler == changed.profiler; });
      if (stock == targets[b].profiles.end() || stock->server_samples == 0 || changed.server_samples == 0) continue;
      ProfileChange c;
      c.target = i;
      c.baseline = b;
      c.profiler = changed.profiler;
      auto percent = [](const ServerProfile& p, std::string_view phase) {
        return 100.0 * static_cast<double>(p.SamplesIn(phase)) / static_cast<double>(p.server_samples);
      };
      auto us = [&](size_t row, double share_percent) {
        return row < stats.size() && stats[row].has_cpu ? stats[row].cpu_us.median * share_percent / 100 : -1.0;
      };
      for (const PhaseSamples& row : stock->phases) {
        PhaseChange pc;
        pc.phase = row.phase;
        pc.stock_percent = percent(*stock, row.phase);
        pc.what_if_percent = percent(changed, row.phase);
        pc.stock_us = us(b, pc.stock_percent);
        pc.what_if_us = us(i, pc.what_if_percent);
        c.phases.push_back(std::move(pc));
      }
      const std::vector<profiling::FunctionSamples> after =
          changed.stacks.Under(kBackendRole).TopN(std::numeric_limits<size_t>::max());
      absl::flat_hash_set<std::string> present;
      for (const profiling::FunctionSamples& f : after) present.insert(f.name);
      for (profiling::FunctionSamples& f : stock->stacks.Under(kBackendRole).TopN(std::numeric_limits<size_t>::max())) {
        if (f.total_percent >= kGoneSharePercent && !present.contains(f.name)) c.gone.push_back(std::move(f));
      }
      std::sort(c.gone.begin(), c.gone.end(), [](const profiling::FunctionSamples& x, const profiling::FunctionSamples& y) {
        return x.total != y.total ? x.total > y.total : x.name < y.name;
      });
      auto per_sample = [&](size_t row, const ServerProfile& p) {
        return std::max(0.0, us(row, 100)) / static_cast<double>(p.server_samples);
      };
      c.diff = profiling::FoldedDiff::Of({&stock->stacks, per_sample(b, *stock), targets[b].label},
                                         {&changed.stacks, per_sample(i, changed), targets[i].label},
                                         "us of server CPU per connection");
      changes.push_back(std::move(c));
    }
  }
  return changes;
}

absl::StatusOr<PgRunOptions> ServersBeside(std::span<const int64_t> shared_buffers, std::span<const int> clients,
                                           const LoopOptions& loop, int64_t rounds) {
  if (shared_buffers.empty() || clients.empty()) return absl::InvalidArgumentError("servers beside a matrix need its sizes and clients");
  if (*std::max_element(clients.begin(), clients.end()) > kMaxClients) {
    return absl::InvalidArgumentError(absl::StrCat("a real server takes at most ", kMaxClients, " clients"));
  }
  absl::StatusOr<Installation> installation = DefaultInstallation();
  if (!installation.ok()) return installation.status();
  PgRunOptions options;
  options.installations.push_back(*std::move(installation));
  options.shared_buffers.assign(shared_buffers.begin(), shared_buffers.end());
  options.clients.assign(clients.begin(), clients.end());
  // Room for the most clients, and for the checks the tool connects with.
  options.server.max_connections = *std::max_element(clients.begin(), clients.end()) + 5;
  options.loop = loop;
  options.loop.clients = clients.front();
  options.rounds = rounds;
  return options;
}

std::string ServerName(const PgTargetResult& target) {
  return target.via.empty() ? absl::StrCat("pg", target.installation.major)
                            : absl::StrCat("pg", target.installation.major, " via ", target.via);
}

absl::StatusOr<PgResult> RunPg(const PgRunOptions& options) {
  absl::StatusOr<std::unique_ptr<PgServers>> servers = PgServers::Start(options);
  if (!servers.ok()) return servers.status();
  PgServers& pg = **servers;
  PreciseRun run;
  bool compared = false;
  for (size_t i = 0; i < pg.size(); ++i) compared = compared || BaselineOf(pg.targets(), i) != i;
  Precision precision = options.precision;
  if (!compared) precision.half_width = 0;  // no ratio to hold to it
  absl::Status status = RunUntilPrecise(
      "pg", RoundPlan(options.rounds, options.seed), precision, pg.size(),
      [&](size_t i, int64_t) { return pg.Measure(i); },
      [&] { return WorstHalfWidth(ComputePgStats(pg.targets())); },
      run);
  if (status.ok() && !options.profilers.empty()) status = pg.Profile();
  absl::StatusOr<PgResult> result = pg.Finish();
  if (!status.ok()) return status;
  if (result.ok()) {
    result->run = run;
    result->compared = compared;
    result->stats = ComputePgStats(result->targets);
    result->client_stats = ComputeClientStats(result->targets);
    result->clocks = ComputeServerClocks(result->targets, result->stats);
    result->profile_changes = ComputeProfileChanges(result->targets, result->stats);
    result->holds = ComputeHoldStats(result->targets);
    result->saturation = ComputeSaturation(result->targets, result->stats, static_cast<int>(AllowedCpus().size()));
    result->worst_half_width = WorstHalfWidth(result->stats);
  }
  return result;
}

}  // namespace backendlab::pgreal
