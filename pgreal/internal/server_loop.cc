// One measured loop, and one profiled pair of loops, against one server:
// the connections held beside it, the server's counters around it, its
// backends waited for, its figures added to its row.
#include "pgreal/internal/server_loop.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/cpus.h"
#include "base/interrupt.h"
#include "base/processes.h"
#include "base/resource_usage.h"
#include "pgreal/internal/processes.h"
#include "profiling/perf_events.h"

namespace backendlab::pgreal::internal {
namespace {

// How long the backends of a loop may take to exit after its last
// connection closed (milliseconds each, seconds on a loaded machine).
constexpr int64_t kBackendExitTimeoutNs = 60'000'000'000;

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
  // Nothing held when target.key.hold is 0. `record`: keep the open time and
  // the memory in the target (a measured round's, not --profile's).
  static absl::StatusOr<Hold> Open(const PgRunOptions& options, const std::string& conninfo, pid_t postmaster,
                                   PgTargetResult& target, bool record) {
    Hold hold;
    hold.postmaster_ = postmaster;
    if (target.key.hold == 0) return hold;
    hold.before_ = postmaster > 0 ? ChildrenOf(postmaster).size() : 0;
    std::function<void(int64_t)> progress;
    if (options.progress) {
      progress = [&](int64_t open) {
        options.progress(absl::StrCat("holding ", open, " of ", target.key.hold, " connections for ", target.label));
      };
    }
    const int in_flight = options.hold_in_flight > 0 ? options.hold_in_flight : SaturationClients();
    absl::StatusOr<HeldConnections> held = HeldConnections::Open(conninfo, target.key.hold, in_flight, progress);
    if (!held.ok()) {
      return absl::Status(held.status().code(), absl::StrCat("`hold`: ", held.status().message()));
    }
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

}  // namespace

absl::Status MeasureOnce(const PgRunOptions& options, const std::string& conninfo, const std::string& hold_conninfo,
                         pid_t postmaster, Pooler* pooler, PgTargetResult& target) {
  LoopOptions loop = options.loop;
  loop.conninfo = conninfo;
  loop.clients = target.key.clients;
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
  loop.clients = target.key.clients;
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

}  // namespace backendlab::pgreal::internal
