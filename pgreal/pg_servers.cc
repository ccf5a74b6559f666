// The servers of a pg run: planned as rows, created, started, measured one
// loop at a time, stopped on every path.
#include "pgreal/pg_servers.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/processes.h"
#include "base/start_layout.h"
#include "buffers/shared_buffers.h"
#include "pgreal/internal/processes.h"
#include "pgreal/internal/server_loop.h"
#include "profiling/perf_events.h"
#include "profiling/perf_record.h"

namespace backendlab::pgreal {
namespace {

using internal::FileSize;
using internal::Uses;

std::vector<int> ClientsSweep(const PgRunOptions& options) {
  return options.clients.empty() ? std::vector<int>{options.loop.clients} : options.clients;
}

std::vector<int64_t> Holds(const PgRunOptions& options) {
  return options.hold.empty() ? std::vector<int64_t>{0} : options.hold;
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
      return absl::InvalidArgumentError("`conninfo` names its own way to the server: no transport of the tool's");
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
absl::Status CheckHold(const PgRunOptions& options) {
  for (size_t i = 0; i < options.hold.size(); ++i) {
    if (options.hold[i] < 0) return absl::InvalidArgumentError("`hold` must be >= 0");
    for (size_t j = 0; j < i; ++j) {
      if (options.hold[j] == options.hold[i]) {
        return absl::InvalidArgumentError(absl::StrCat("`hold`: ", options.hold[i], " given twice"));
      }
    }
  }
  const int64_t most = MostHeld(options);
  if (most == 0) return absl::OkStatus();
  const std::vector<int> sweep = ClientsSweep(options);
  const int most_clients = *std::max_element(sweep.begin(), sweep.end());
  if (options.conninfo.empty() && options.server.max_connections < most + most_clients) {
    return absl::InvalidArgumentError(absl::StrCat("max_connections ", options.server.max_connections, " leaves no room for ",
                                                   most, " held connections and ", most_clients, " clients"));
  }
  HostNeeds needs;
  needs.what = absl::StrCat("`hold`=", most);
  // Each held and each client connection is a socket here; libpq, perf's
  // counters and the logs take a few dozen more.
  needs.descriptors = most + most_clients + 64;
  if (options.conninfo.empty()) {
    // Each server's own processes (checkpointer, walwriter, ...): a handful.
    const int64_t servers = static_cast<int64_t>(options.installations.size() * options.shared_buffers.size() *
                                                 (options.what_ifs.size() + 2 + (options.aa ? 1 : 0)));
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
  needs.what = absl::StrCat("`hold`=", most, " with the servers' shared memory (", shared >> 20, " MiB)");
  needs.memory_bytes = most * kHeldBackendBytes + shared;
  return CheckHostLimits(needs);
}

// Everything about the options that can be checked before anything starts.
absl::Status CheckOptions(const PgRunOptions& options) {
  if (options.rounds < 1) return absl::InvalidArgumentError("`rounds` must be at least 1");
  for (int c : ClientsSweep(options)) {
    if (c < 1 || c > kMaxClients) return absl::InvalidArgumentError(absl::StrCat("`clients` must be 1..", kMaxClients));
  }
  if (absl::Status s = CheckTransports(options); !s.ok()) return s;
  if (absl::Status s = CheckHold(options); !s.ok()) return s;
  const bool existing = !options.conninfo.empty();
  // The built-in profiler first: with an existing server no postmaster pid would make it possible.
  if (Uses(options, Profiler::kBuiltin) && existing) {
    return absl::InvalidArgumentError(
        "`profile`=builtin loads the sampler library into a server the tool starts; `conninfo` names an existing one");
  }
  if (!options.profilers.empty() && existing && options.postmaster_pid <= 0) {
    return absl::InvalidArgumentError("`profile` of an existing server needs its `postmaster_pid`");
  }
  if (Uses(options, Profiler::kPerf)) {
    if (absl::Status s = profiling::SystemWideRecordingAvailable(); !s.ok()) return s;
  }
  // Where the kernel counts system calls at all, a name it has no
  // tracepoint for is a mistake; where it does not, every round says why.
  if (profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls).ok()) {
    for (const std::string& kind : options.server_syscall_kinds) {
      if (!profiling::HasSyscallTracepoint(kind)) {
        return absl::InvalidArgumentError(
            absl::StrCat("no system call ", kind, " to count (no tracepoint syscalls:sys_enter_", kind, ")"));
      }
    }
  }
  if (existing && (!options.what_ifs.empty() || options.aa)) {
    return absl::InvalidArgumentError(
        "`what_if` and `aa` change or copy a server the tool starts; `conninfo` names an existing one, which it must not "
        "change");
  }
  if (!options.via.empty()) {
    if (existing) {
      return absl::InvalidArgumentError(
          "`via` puts a pooler in front of a server the tool starts; for an existing pooler, give its `conninfo`");
    }
    if (options.server.tcp) {
      // The direct rows would pay TCP and a password, the pooled ones a
      // Unix socket and trust: not a comparison.
      return absl::InvalidArgumentError("`via` goes through Unix sockets only; it does not combine with `tcp`");
    }
  }
  if (!existing) {
    // The deepest socket of the run: a pooler's, in its directory inside the server's.
    if (absl::Status s = CheckSocketRoom(options.via.empty() ? "" : PoolerSocketDirectorySuffix()); !s.ok()) return s;
    // A server that preloads a library (Server::Create checks it too, but
    // only once the servers before it are made).
    bool preloads = Uses(options, Profiler::kBuiltin);
    for (const WhatIf& w : options.what_ifs) {
      ServerOptions changed;
      preloads = preloads || (ApplyWhatIf(w, changed).ok() && !changed.preload.empty());
    }
    if (preloads) {
      if (absl::Status s = CheckPreloadRoom(); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// The servers of one installation at one shared_buffers: the stock one,
// then one per what-if (the setup-durations clock added beside an 18+ stock
// server when asked for), then the A/A copy.
struct ServerVariant {
  std::optional<WhatIf> what_if;
  int copy = 0;
};
std::vector<ServerVariant> VariantsOf(const PgRunOptions& options, const Installation& installation) {
  std::vector<ServerVariant> variants = {{}};
  for (const WhatIf& w : options.what_ifs) variants.push_back({w, 0});
  const bool clock_asked = std::any_of(options.what_ifs.begin(), options.what_ifs.end(),
                                       [](const WhatIf& w) { return w.kind == WhatIfKind::kSetupDurations; });
  if (options.server_clock && installation.major >= 18 && !clock_asked) {
    variants.push_back({WhatIf{WhatIfKind::kSetupDurations, ""}, 0});
  }
  if (options.aa) variants.push_back({std::nullopt, 1});
  return variants;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgServers>> PgServers::Start(const PgRunOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  std::string pgbouncer;
  if (!options.via.empty()) {
    absl::StatusOr<std::string> found = FindPgBouncer(options.pgbouncer);
    if (!found.ok()) return found.status();
    pgbouncer = *found;
  }
  std::unique_ptr<PgServers> run(new PgServers(options));
  PgResult& result = run->result_;
  result.shows = {.clients = ClientsSweep(options).size() > 1, .hold = !options.hold.empty()};
  // A killed run's change to the host, undone before this run makes its own.
  result.restored = RestoreHugePagesOfEndedRun();
  if (!options.conninfo.empty()) {
    if (absl::Status s = run->PlanExisting(); !s.ok()) return s;
    return run;
  }
  // On an error from here on the destructor stops and removes what was made.
  if (absl::Status s = run->CreateServers(); !s.ok()) return s;
  if (absl::Status s = CheckHoldMemory(options, run->servers_); !s.ok()) return s;
  if (absl::Status s = run->ReserveHugePages(); !s.ok()) return s;
  // Each postmaster once (a server has a row per clients, hold and
  // transport), then the poolers.
  for (size_t i = 0; i < result.targets.size(); ++i) {
    if (i > 0 && run->server_of_[i] == run->server_of_[i - 1]) continue;
    if (options.progress) options.progress(absl::StrCat("starting the server for ", result.targets[i].label));
    if (absl::Status s = run->servers_[run->server_of_[i]]->StartPostmaster(); !s.ok()) return s;
  }
  if (absl::Status s = run->StartPoolers(pgbouncer); !s.ok()) return s;
  // Each log read from here on: what the start logged is no measured connection's.
  for (const std::unique_ptr<Server>& server : run->servers_) run->log_offsets_.push_back(FileSize(server->log_path()));
  return run;
}

absl::Status PgServers::PlanExisting() {
  for (int c : ClientsSweep(options_)) {
    for (int64_t n : Holds(options_)) {
      PgTargetResult target;
      target.key.clients = c;
      target.key.hold = n;
      target.label = target.key.Label(result_.shows);
      target.installation.build = "an existing server, named by its conninfo";
      result_.targets.push_back(std::move(target));
    }
  }
  if (options_.postmaster_pid <= 0) {
    result_.server_figures_note = "not available: the server was not started by the tool; give `postmaster_pid`";
  }
  return absl::OkStatus();
}

// Data directories first, one initdb per installation and copies of it,
// then the postmasters: a running server's directory is no template.
absl::Status PgServers::CreateServers() {
  for (const Installation& installation : options_.installations) {
    std::string template_data;
    for (int64_t size : options_.shared_buffers) {
      for (const ServerVariant& variant : VariantsOf(options_, installation)) {
        ServerOptions server = options_.server;
        server.installation = installation;
        server.shared_buffers_bytes = size;
        if (options_.randomise) server.start_seed = StartSeed(options_.seed, servers_.size(), 0);
        if (Uses(options_, Profiler::kBuiltin)) server.builtin_sampler_hz = options_.profile_options.frequency_hz;
        if (variant.what_if) {
          if (absl::Status s = ApplyWhatIf(*variant.what_if, server); !s.ok()) return s;
        }
        TargetKey key;
        key.bindir = installation.bindir;
        key.major = installation.major;
        key.shared_buffers_bytes = size;
        key.what_if = variant.what_if;
        key.copy = variant.copy;
        if (options_.progress) {
          options_.progress(absl::StrCat(template_data.empty() ? "initdb" : "copying", " for ", key.Label({})));
        }
        absl::StatusOr<std::unique_ptr<Server>> created = Server::Create(server, template_data);
        if (!created.ok()) return created.status();
        if (template_data.empty()) template_data = (*created)->data_directory();
        PgTargetResult target;
        target.installation = installation;
        target.settings = (*created)->settings();
        target.logs_setup = internal::LogsSetup(installation.major, target.settings);
        // A what-if's and a copy's rows are direct: the change is the server's.
        std::vector<std::optional<Via>> vias = {std::nullopt};
        if (key.stock()) vias.insert(vias.end(), options_.via.begin(), options_.via.end());
        for (const std::optional<Via>& via : vias) {
          // A pooler is reached through its Unix socket alone.
          const size_t transports = via ? 1 : options_.transports.size();
          for (size_t tr = 0; tr < transports; ++tr) {
            for (int c : ClientsSweep(options_)) {
              for (int64_t n : Holds(options_)) {
                PgTargetResult t = target;
                t.key = key;
                t.key.via = via;
                t.key.transport = options_.transports[tr];
                t.key.clients = c;
                t.key.hold = n;
                t.label = t.key.Label(result_.shows);
                result_.targets.push_back(std::move(t));
                server_of_.push_back(servers_.size());
                poolers_.emplace_back();
              }
            }
          }
        }
        servers_.push_back(std::move(*created));
        huge_pages_.push_back(variant.what_if && variant.what_if->kind == WhatIfKind::kHugePages);
      }
    }
  }
  return absl::OkStatus();
}

// The huge pages the huge-pages servers will map, reserved before any
// starts, given back once they have stopped (StopAll).
absl::Status PgServers::ReserveHugePages() {
  int64_t pages = 0;
  for (size_t s = 0; s < servers_.size(); ++s) {
    if (!huge_pages_[s]) continue;
    absl::StatusOr<int64_t> needed = servers_[s]->HugePagesNeeded();
    if (!needed.ok()) return needed.status();
    pages += *needed;
  }
  if (pages == 0) return absl::OkStatus();
  if (options_.progress) options_.progress(absl::StrCat("reserving ", pages, " huge pages"));
  absl::StatusOr<std::unique_ptr<HugePageReservation>> reserved = HugePageReservation::Reserve(pages);
  if (!reserved.ok()) return reserved.status();
  result_.huge_pages_added = (*reserved)->added();
  reserved_ = std::move(*reserved);
  return absl::OkStatus();
}

absl::Status PgServers::StartPoolers(const std::string& pgbouncer) {
  for (size_t i = 0; i < result_.targets.size(); ++i) {
    const PgTargetResult& t = result_.targets[i];
    if (!t.key.via) continue;
    Server& server = *servers_[server_of_[i]];
    if (options_.progress) options_.progress(absl::StrCat("starting ", t.label));
    PoolerOptions pooler;
    pooler.via = *t.key.via;
    pooler.binary = pgbouncer;
    pooler.directory = absl::StrCat(server.directory(), PoolerSocketDirectorySuffix(t.key.via->mode));
    pooler.user = server.user();
    pooler.server_socket_directory = server.directory();
    pooler.server_port = server.port();
    pooler.pool_size = t.key.clients;
    pooler.max_clients = t.key.clients + 10;
    pooler.keep = options_.server.keep;
    absl::StatusOr<std::unique_ptr<Pooler>> started = Pooler::Start(pooler);
    if (!started.ok()) return started.status();
    poolers_[i] = std::move(*started);
  }
  return absl::OkStatus();
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
    return internal::MeasureOnce(options_, options_.conninfo, options_.conninfo, options_.postmaster_pid, nullptr,
                                 target);
  }
  Server& server = *servers_[server_of_[i]];
  Pooler* pooler = poolers_[i].get();
  const int64_t measured_before = target.loop.connections;
  const std::string direct = server.conninfo(target.key.transport);
  absl::Status s = internal::MeasureOnce(options_, pooler != nullptr ? pooler->conninfo() : direct, direct,
                                         server.postmaster_pid(), pooler, target);
  if (!s.ok() && !absl::IsCancelled(s)) {
    // A failed connection because the server or the pooler died: say that,
    // with its log. A killed process's sockets close before it can be
    // reaped, so its death may still be under way: a grace to see it.
    const int64_t grace_ns = pooler != nullptr ? 0 : internal::kDeathGraceNs;
    if (absl::Status alive = server.CheckRunning(grace_ns); !alive.ok()) return alive;
    if (pooler != nullptr) {
      if (absl::Status alive = pooler->CheckRunning(internal::kDeathGraceNs); !alive.ok()) return alive;
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
    internal::ReadSetupLines(server.log_path(), log_offsets_[server_of_[i]], options_.loop.warmup, measured,
                             target.setup, target.setup_missing);
  }
  return s;
}

absl::Status PgServers::Profile(int only_clients) {
  for (size_t i = 0; i < result_.targets.size(); ++i) {
    PgTargetResult& target = result_.targets[i];
    if (only_clients > 0 && target.key.clients != only_clients) continue;
    if (options_.progress) options_.progress(absl::StrCat("profiling ", target.label));
    if (servers_.empty()) {
      absl::StatusOr<int> major = ServerMajorVersion(options_.conninfo);
      if (!major.ok()) return major.status();
      if (absl::Status s = internal::ProfileOnce(options_, options_.conninfo, options_.conninfo,
                                                 options_.postmaster_pid, *major, nullptr, target);
          !s.ok()) {
        return s;
      }
      continue;
    }
    if (target.key.via) continue;  // the server's phases are its direct target's
    Server& server = *servers_[server_of_[i]];
    const std::string direct = server.conninfo(target.key.transport);
    absl::Status s = internal::ProfileOnce(options_, direct, direct, server.postmaster_pid(), target.key.major,
                                           server.sample_file(), target);
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
  if (reserved_ != nullptr) {
    absl::Status released = reserved_->Release();
    if (status.ok() && !released.ok()) status = released;
    result_.huge_pages_released = reserved_->released();
    reserved_.reset();
  }
  return status;
}

absl::StatusOr<PgResult> PgServers::Finish() {
  if (absl::Status s = StopAll(); !s.ok()) return s;
  return result_;
}

}  // namespace backendlab::pgreal
