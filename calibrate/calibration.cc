// The fit: the real server measured and profiled, the mock weighed and
// re-weighed until its groups cost what the real server's do, then both
// side by side.
#include "calibrate/calibration.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "base/summary.h"
#include "buffers/shared_buffers.h"
#include "calibrate/internal/fit.h"
#include "lifecycle/cycle.h"
#include "pgreal/pg_run.h"
#include "pgreal/pg_servers.h"
#include "profiling/perf_events.h"
#include "profiling/perf_record.h"

namespace backendlab::calibrate {
namespace {

using internal::ChooseExitPath;
using internal::MockWeighing;
using internal::RealWeighing;
using internal::Refit;
using internal::Shares;

size_t Index(Group g) { return static_cast<size_t>(g); }

// How far the mock's exit may exceed the real one's before the fit gives
// up libc's exit path (ChooseExitPath): the goal's 10 %.
constexpr double kExitOvershoot = 0.10;

// `syscalls` less the phase clocks' calls, once syscalls_by_kind is filled.
void LeaveOutPhaseClocks(Weighing& w) {
  if (w.syscalls < 0) return;
  for (std::string_view k : kPhaseClockSyscalls) {
    auto it = w.syscalls_by_kind.find(std::string(k));
    if (it != w.syscalls_by_kind.end()) w.syscalls -= it->second;
  }
}


double Median(const std::vector<double>& v) { return Summarize(v).median; }

// The mock as a PostgreSQL 15 release build is: the hash refcount table,
// no exit check, palloc0'd catalog caches of a recent syscache set,
// `clients` in flight as the real server's loop has; no bare forks, so that the server's figures are
// its connections' alone.
lifecycle::CycleOptions MockOptions(const CalibrationOptions& o, int64_t shared_buffers, int clients,
                                    const std::optional<lifecycle::BackendWeight>& weight,
                                    const std::vector<std::string>& kinds) {
  lifecycle::CycleOptions c;
  c.mode = lifecycle::Mode::kFork;
  c.clients = clients;
  c.backend.layout = buffers::Layout::kHash;
  c.backend.exit_check = buffers::ExitCheckPolicy::kAssert;
  c.backend.catcache = catcache::BucketStrategy::kPalloc0;
  c.backend.syscache = "pg17";
  c.backend.shared_buffers = buffers::SharedBuffers{static_cast<uint64_t>(shared_buffers),
                                                    static_cast<uint32_t>(shared_buffers / buffers::kBlockSize)};
  c.backend.weight = weight;
  c.backend.weight_source = "calibrate";
  c.connections = o.connections;
  c.warmup = o.warmup;
  c.baseline_forks = 0;
  c.server_syscall_kinds = kinds;
  return c;
}

// The files a backend of `data_dir` reads at start-up as its relcache
// init files: the shared one and its database's (the newest, the one the
// runs just wrote).
int64_t RelcacheInitBytes(const std::string& data_dir) {
  std::error_code ec;
  int64_t bytes = 0;
  const auto global = std::filesystem::path(data_dir) / "global" / "pg_internal.init";
  if (std::filesystem::exists(global, ec)) bytes += static_cast<int64_t>(std::filesystem::file_size(global, ec));
  std::filesystem::file_time_type newest{};
  int64_t local = 0;
  for (const auto& db : std::filesystem::directory_iterator(std::filesystem::path(data_dir) / "base", ec)) {
    const auto f = db.path() / "pg_internal.init";
    if (!std::filesystem::exists(f, ec)) continue;
    const auto t = std::filesystem::last_write_time(f, ec);
    if (local == 0 || t > newest) {
      newest = t;
      local = static_cast<int64_t>(std::filesystem::file_size(f, ec));
    }
  }
  return bytes + local;
}

// A target's figures from round `first` on: the side-by-side's rounds;
// its groups from its profile, if it has one.
Weighing RealFrom(const pgreal::PgTargetResult& t, size_t first) {
  const std::span<const ServerUsage> server = std::span(t.server_rounds).subspan(std::min(first, t.server_rounds.size()));
  const std::vector<double> rates(t.rates.begin() + static_cast<std::ptrdiff_t>(std::min(first, t.rates.size())), t.rates.end());
  return RealWeighing(server, rates, t.server_syscall_kinds, t.profiles.empty() ? nullptr : &t.profiles[0]);
}

// The totals every weighing has, per connection over its rounds.
void WeighTotals(std::span<const ServerUsage> rounds, const std::vector<double>& rates,
                 std::span<const std::string> kinds, Weighing& w) {
  w.rates = rates;
  w.rounds.assign(rounds.begin(), rounds.end());
  const PerConnection per = PerConnectionOf(Merged(rounds));
  w.connections_per_second = Median(rates);
  w.cpu_us = per.cpu_us;
  w.minor_faults = per.minor_faults;
  if (per.syscalls >= 0) {
    w.syscalls = per.syscalls;
    for (size_t k = 0; k < kinds.size() && k < per.syscalls_by_kind.size(); ++k) w.syscalls_by_kind[kinds[k]] = per.syscalls_by_kind[k];
    LeaveOutPhaseClocks(w);
  }
}

}  // namespace

namespace internal {

std::optional<Group> GroupOfRealPhase(std::string_view phase) {
  const absl::StatusOr<pgreal::RealPhase> p = ParseName(phase, pgreal::kRealPhaseNames, "phase");
  return p.ok() ? GroupOf(*p) : std::nullopt;
}

void Shares(Weighing& w) {
  double sum = 0;
  for (double v : w.group_cpu_us) sum += v;
  for (size_t g = 0; g < kNumGroups; ++g) w.group_share[g] = sum > 0 ? w.group_cpu_us[g] / sum : 0;
}

// The real server's figures per connection it served (warm-ups included:
// its counters ran through them), its groups from the profile (none
// without one).
Weighing RealWeighing(std::span<const ServerUsage> rounds, const std::vector<double>& rates,
                      std::span<const std::string> kinds, const pgreal::ServerProfile* profile) {
  Weighing w;
  WeighTotals(rounds, rates, kinds, w);
  if (profile == nullptr) return w;
  // A group's CPU: the server's CPU in the share of its samples that the
  // group's phases hold.
  const double all = static_cast<double>(std::max<int64_t>(profile->server_samples, 1));
  for (const pgreal::PhaseSamples& p : profile->phases) {
    if (std::optional<Group> g = GroupOfRealPhase(p.phase)) {
      w.group_cpu_us[Index(*g)] += w.cpu_us * static_cast<double>(p.samples) / all;
    }
  }
  Shares(w);
  return w;
}

Weighing MockWeighing(const lifecycle::CycleResult& r, std::span<const ServerUsage> rounds,
                      const std::vector<double>& rates, std::span<const std::string> kinds) {
  Weighing w;
  WeighTotals(rounds, rates, kinds, w);
  for (const MockPhaseGroup& row : kMockPhaseGroups) {
    const lifecycle::PhaseHistograms& phase = r.backends.phases[static_cast<size_t>(row.phase)];
    w.group_cpu_us[Index(row.group)] += phase.cpu_ns.mean() / 1e3;
    w.group_minor_faults[Index(row.group)] += phase.minor_faults.mean();
  }
  Shares(w);
  return w;
}

// libc's exit path runs the mock's own exit handlers too (the tool's
// libraries and static destructors, which a PostgreSQL backend has no
// counterpart of). Where, measured with the starting profile, they cost
// more than the real backend's whole exit, the profile ends backends with
// _exit instead and does the real exit's work as exit work: the handlers'
// faults as pages touched, the real exit's CPU less what an unweighted
// mock's exit already costs as exit.cpu_us (the fit then corrects both).
// Returns the weighing the fit starts from: the starting profile's, its
// exit as the new exit path would make it.
Weighing ChooseExitPath(const Weighing& real, const Weighing& starting, const Weighing& unweighted,
                        lifecycle::BackendWeight& w, std::vector<std::string>& notes) {
  const size_t exit = Index(Group::kExit);
  if (starting.group_cpu_us[exit] <= real.group_cpu_us[exit] * (1 + kExitOvershoot)) return starting;
  notes.push_back(absl::StrFormat(
      "exit path: the mock's exit() handlers made its exit cost %.0f us against the real backend's %.0f us; the "
      "profile ends backends with _exit and does the real exit's work as exit work instead",
      starting.group_cpu_us[exit], real.group_cpu_us[exit]));
  w.exit_path = lifecycle::ExitPath::kUnderscoreExit;
  w.exit.cpu_us = std::max(0.0, real.group_cpu_us[exit] - unweighted.group_cpu_us[exit]);
  w.exit.touch_pages = std::max<int64_t>(
      0, std::llround(starting.group_minor_faults[exit] - unweighted.group_minor_faults[exit]));
  Weighing expected = starting;
  expected.group_cpu_us[exit] = unweighted.group_cpu_us[exit] + w.exit.cpu_us;
  Shares(expected);
  return expected;
}

// One step of the fit: each knob moved by what is still missing. Pages and
// system calls are added where the mock has fewer than the real server,
// never taken away below zero; so is each group's CPU (a note says where
// the mock already spends more).
void Refit(const Weighing& real, const Weighing& mock, lifecycle::BackendWeight& w, std::vector<std::string>& notes,
           bool last) {
  const auto add_pages = static_cast<int64_t>(std::llround(real.minor_faults - mock.minor_faults));
  w.startup.touch_pages = std::max<int64_t>(0, w.startup.touch_pages + add_pages);
  if (last && w.startup.touch_pages == 0 && add_pages < 0) {
    notes.push_back(absl::StrFormat("the mock faults %d more pages per connection than the real server", -add_pages));
  }
  for (std::string_view kind : lifecycle::kWeightSyscalls) {
    const std::string k(kind);
    auto r = real.syscalls_by_kind.find(k);
    auto m = mock.syscalls_by_kind.find(k);
    if (r == real.syscalls_by_kind.end() || m == mock.syscalls_by_kind.end()) continue;
    const int64_t add = static_cast<int64_t>(std::llround(r->second - m->second));
    const int64_t now = std::max<int64_t>(0, (w.startup.syscalls.count(k) ? w.startup.syscalls[k] : 0) + add);
    if (now > 0) {
      w.startup.syscalls[k] = now;
    } else {
      w.startup.syscalls.erase(k);
    }
  }
  const std::pair<Group, lifecycle::PhaseWeight*> knobs[] = {
      {Group::kStartup, &w.startup}, {Group::kWork, &w.work}, {Group::kExit, &w.exit}};
  for (const auto& [g, phase] : knobs) {
    const double missing = real.group_cpu_us[Index(g)] - mock.group_cpu_us[Index(g)];
    phase->cpu_us = std::max(0.0, phase->cpu_us + missing);
    if (last && phase->cpu_us == 0 && missing < 0) {
      notes.push_back(absl::StrFormat("the mock's %s already costs %.0f us more than the real server's",
                                      std::string(NameOf(g, kGroupNames)), -missing));
    }
  }
}

}  // namespace internal

namespace {

double MinorFaults(const PerConnection& p) { return p.minor_faults; }
double Syscalls(const PerConnection& p) { return p.syscalls; }

}  // namespace

Agreement AgreementOf(const Weighing& mock, const Weighing& real) {
  Agreement a;
  a.rate = PairedRatioOfCommonRounds(mock.rates, real.rates, Better::kHigher);
  a.cpu_us = PairedRatioOfCommonRounds(CpuUsByRound(mock.rounds), CpuUsByRound(real.rounds), Better::kLower);
  a.minor_faults = PairedRatioOfCommonRounds(PerRound(mock.rounds, MinorFaults), PerRound(real.rounds, MinorFaults), Better::kLower);
  if (mock.syscalls >= 0 && real.syscalls >= 0) {
    a.syscalls = PairedRatioOfCommonRounds(PerRound(mock.rounds, Syscalls), PerRound(real.rounds, Syscalls), Better::kLower);
  }
  return a;
}

Goal RatioGoalOf(const RatioEstimate& r) {
  const double low = 1 - kRatioGoal, high = 1 + kRatioGoal;
  auto within = [&](double x) { return low <= x && x <= high; };
  if (!r.has_interval) return within(r.ratio) ? Goal::kMet : Goal::kMissed;
  if (within(r.interval.low) && within(r.interval.high)) return Goal::kMet;
  if (r.interval.high < low || r.interval.low > high) return Goal::kMissed;
  return Goal::kUnsure;
}

Goal ShareGoalOf(double mock_share, double real_share) {
  return std::fabs(100 * (mock_share - real_share)) <= kSharePointsGoal ? Goal::kMet : Goal::kMissed;
}

absl::StatusOr<std::vector<std::string>> MappedLibraries(int pid) {
  std::ifstream maps(absl::StrCat("/proc/", pid, "/maps"));
  if (!maps) return absl::UnavailableError(absl::StrCat("cannot read /proc/", pid, "/maps"));
  std::vector<std::string> libs;
  std::set<std::string> seen;
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.find(".so") == std::string::npos || name.rfind("ld-linux", 0) == 0) continue;
    if (seen.insert(path).second) libs.push_back(path);
  }
  return libs;
}

namespace {

absl::Status CheckOptions(const CalibrationOptions& o) {
  if (o.connections < 10 || o.connections > 1'000'000) return absl::InvalidArgumentError("`connections` must be 10..10^6");
  if (o.rounds < 1 || o.rounds > 100) return absl::InvalidArgumentError("`rounds` must be 1..100");
  if (o.fit_rounds < 1 || o.fit_rounds > 100) return absl::InvalidArgumentError("`fit_rounds` must be 1..100");
  if (o.iterations < 1 || o.iterations > 20) return absl::InvalidArgumentError("`iterations` must be 1..20");
  if (o.saturation_clients < 0 || o.saturation_clients == 1 ||
      o.saturation_clients > std::min<int64_t>(o.connections, kMaxClients)) {
    return absl::InvalidArgumentError(absl::StrCat("the saturation check's clients must be 2 .. min(connections, ",
                                                   kMaxClients, "), or 0 for none"));
  }
  if (o.fit_shared_buffers < (int64_t{1} << 20)) return absl::InvalidArgumentError("the fit's shared_buffers must be at least 1MB");
  if (absl::Status s = profiling::SystemWideRecordingAvailable(); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("calibrate needs perf for the real server's phases: ", s.message()));
  }
  return absl::OkStatus();
}

// The real server's rows: one per size at one client (the fit's and the
// check's), and the fit's size at saturation; pg.size() where absent.
struct RealRows {
  size_t fit = 0, check = 0, saturated = 0;
  std::vector<size_t> one_client;  // fit, then check
};

// The real server: one per size, kept running from the fit to the
// side-by-side, where the fit's size also runs at saturation.
absl::StatusOr<std::unique_ptr<pgreal::PgServers>> StartReal(const CalibrationOptions& o,
                                                            const std::vector<std::string>& kinds, RealRows& rows) {
  pgreal::PgRunOptions real;
  real.installations = {o.installation};
  real.shared_buffers = {o.fit_shared_buffers};
  if (o.check_shared_buffers > 0) real.shared_buffers.push_back(o.check_shared_buffers);
  real.clients = {1};
  if (o.saturation_clients > 0) real.clients.push_back(o.saturation_clients);
  real.loop.connections = o.connections;
  real.loop.warmup = o.warmup;
  real.rounds = 1;
  real.profilers = {pgreal::Profiler::kPerf};
  real.profile_options.frequency_hz = o.perf_frequency_hz;
  real.server_syscall_kinds = kinds;
  // As `pg` runs its servers (the most clients + 5): a backend's start-up
  // walks arrays sized by max_connections, so the target is pg's server's.
  real.server.max_connections = real.clients.back() + 5;
  absl::StatusOr<std::unique_ptr<pgreal::PgServers>> servers = pgreal::PgServers::Start(real);
  if (!servers.ok()) return servers.status();
  const pgreal::PgServers& pg = **servers;
  auto row_at = [&](int64_t size, int clients) {
    for (size_t i = 0; i < pg.size(); ++i) {
      if (pg.target(i).key.shared_buffers_bytes == size && pg.target(i).key.clients == clients) return i;
    }
    return pg.size();
  };
  rows.fit = row_at(o.fit_shared_buffers, 1);
  rows.check = o.check_shared_buffers > 0 ? row_at(o.check_shared_buffers, 1) : pg.size();
  rows.saturated = o.saturation_clients > 0 ? row_at(o.fit_shared_buffers, o.saturation_clients) : pg.size();
  rows.one_client = {rows.fit};
  if (rows.check < pg.size()) rows.one_client.push_back(rows.check);
  return servers;
}

// What can be read off the real server: its libraries, its cancel key's
// random bytes, its relcache init files; the exit path libc's exit.
void StartingWeight(pgreal::PgServers& pg, size_t fit, CalibrationResult& result) {
  lifecycle::BackendWeight& w = result.weight;
  const bool has_crypto =
      std::any_of(w.libraries.begin(), w.libraries.end(), [](const std::string& l) { return l.find("libcrypto") != std::string::npos; });
  // PostgreSQL draws each backend's cancel key (4 bytes through 17) with
  // pg_strong_random, OpenSSL's RAND_bytes in a build with OpenSSL. Read off
  // the protocol, not measured: the note says so.
  w.random_bytes_per_fork = has_crypto ? 4 : 0;
  if (has_crypto) {
    result.notes.push_back(absl::StrCat(
        "random bytes per fork: 4, PostgreSQL's cancel key through 17 (assumed, not measured; the server is ",
        result.server_version, ")"));
  }
  w.exit_path = lifecycle::ExitPath::kExit;
  w.startup.read_file_bytes = RelcacheInitBytes(pg.data_directory(fit));
}

// One configuration of the mock and its runs so far.
struct MockRun {
  int64_t size;
  int clients;
  std::optional<lifecycle::BackendWeight> weight;
  lifecycle::CycleResult total;
  std::vector<ServerUsage> rounds;
  std::vector<double> rates;
  Weighing Weigh(const std::vector<std::string>& kinds) const { return MockWeighing(total, rounds, rates, kinds); }
};

absl::Status RunMock(const CalibrationOptions& o, const std::vector<std::string>& kinds, MockRun& m) {
  absl::StatusOr<lifecycle::CycleResult> r = lifecycle::RunCycle(MockOptions(o, m.size, m.clients, m.weight, kinds));
  if (!r.ok()) return r.status();
  if (r->interrupted) return StoppedStatus();
  const double wall = static_cast<double>(std::max<int64_t>(r->wall_ns, 1));
  m.rates.push_back(static_cast<double>(r->connections) * 1e9 / wall);
  m.rounds.push_back(r->server);
  lifecycle::MergeRound(*r, m.total);
  return absl::OkStatus();
}

// The mock unweighted, with the starting weight, then refitted
// `iterations` times against `real_target`.
absl::Status FitMock(const CalibrationOptions& o, const std::vector<std::string>& kinds, const Weighing& real_target,
                     CalibrationResult& result, const std::function<void(const std::string&)>& say) {
  lifecycle::BackendWeight& w = result.weight;
  MockRun unweighted{o.fit_shared_buffers, 1, std::nullopt, {}, {}, {}};
  say("calibrate: the mock, unweighted");
  if (absl::Status s = RunMock(o, kinds, unweighted); !s.ok()) return s;
  MockRun starting{o.fit_shared_buffers, 1, w, {}, {}, {}};
  say("calibrate: the mock with the starting profile");
  if (absl::Status s = RunMock(o, kinds, starting); !s.ok()) return s;
  Weighing mock = ChooseExitPath(real_target, starting.Weigh(kinds), unweighted.Weigh(kinds), w, result.notes);
  for (int i = 0; i < o.iterations; ++i) {
    Refit(real_target, mock, w, result.notes, i + 1 == o.iterations);
    MockRun weighed{o.fit_shared_buffers, 1, w, {}, {}, {}};
    say(absl::StrCat("calibrate: fit ", i + 1, "/", o.iterations));
    if (absl::Status s = RunMock(o, kinds, weighed); !s.ok()) return s;
    mock = weighed.Weigh(kinds);
  }
  return absl::OkStatus();
}

// The side-by-side: real and mock (weighed and not) at the fit's size and
// the check's, and both at saturation, in an order shuffled each round.
// Each real row's rounds so far (the fit's measurements) are not the
// side-by-side's.
absl::Status SideBySide(const CalibrationOptions& o, const std::vector<std::string>& kinds, pgreal::PgServers& pg,
                        const RealRows& rows, CalibrationResult& result) {
  const lifecycle::BackendWeight& w = result.weight;
  std::vector<size_t> reals = rows.one_client;
  if (rows.saturated < pg.size()) reals.push_back(rows.saturated);
  std::vector<size_t> first_round;
  for (size_t i = 0; i < pg.size(); ++i) first_round.push_back(pg.target(i).rates.size());
  std::vector<MockRun> mocks = {{o.fit_shared_buffers, 1, w, {}, {}, {}}, {o.fit_shared_buffers, 1, std::nullopt, {}, {}, {}}};
  const size_t mock_check = mocks.size();
  if (rows.check < pg.size()) mocks.push_back({o.check_shared_buffers, 1, w, {}, {}, {}});
  const size_t mock_saturated = mocks.size();
  if (rows.saturated < pg.size()) mocks.push_back({o.fit_shared_buffers, o.saturation_clients, w, {}, {}, {}});
  absl::Status status = RunInterleaved("calibrate", o.rounds, reals.size() + mocks.size(), [&](size_t i, int64_t) -> absl::Status {
    if (i < reals.size()) return pg.Measure(reals[i]);
    return RunMock(o, kinds, mocks[i - reals.size()]);
  });
  if (!status.ok()) return status;
  result.real_fit = RealFrom(pg.target(rows.fit), first_round[rows.fit]);
  result.mock_fit = mocks[0].Weigh(kinds);
  result.mock_unweighted = mocks[1].Weigh(kinds);
  result.fit = AgreementOf(result.mock_fit, result.real_fit);
  if (rows.check < pg.size()) {
    result.checked = true;
    result.real_check = RealFrom(pg.target(rows.check), first_round[rows.check]);
    result.mock_check = mocks[mock_check].Weigh(kinds);
    result.check = AgreementOf(result.mock_check, result.real_check);
  }
  if (rows.saturated < pg.size()) {
    result.saturated = true;
    result.real_saturated = RealFrom(pg.target(rows.saturated), first_round[rows.saturated]);
    result.mock_saturated = mocks[mock_saturated].Weigh(kinds);
    // The mock's groups come from its phase counters, the real server's
    // from a profile this check does not take: totals only, on both sides.
    result.mock_saturated.group_cpu_us = {};
    result.mock_saturated.group_share = {};
    result.mock_saturated.group_minor_faults = {};
    result.saturation = AgreementOf(result.mock_saturated, result.real_saturated);
  }
  return absl::OkStatus();
}

// A kind of system call the real backend makes more of than a weight can make.
void NoteUnmakeableSyscalls(CalibrationResult& result) {
  for (const auto& [kind, n] : result.real_fit.syscalls_by_kind) {
    const bool makeable = std::find(std::begin(lifecycle::kWeightSyscalls), std::end(lifecycle::kWeightSyscalls), kind) !=
                          std::end(lifecycle::kWeightSyscalls);
    auto m = result.mock_fit.syscalls_by_kind.find(kind);
    if (!makeable && m != result.mock_fit.syscalls_by_kind.end() && n > m->second + 0.5) {
      result.notes.push_back(absl::StrFormat("%s: %.1f per connection in the real server, %.1f in the mock (a weight cannot make it)",
                                             kind, n, m->second));
    }
  }
}

}  // namespace

absl::StatusOr<CalibrationResult> RunCalibration(const CalibrationOptions& o) {
  if (absl::Status s = CheckOptions(o); !s.ok()) return s;
  InstallStopHandlers();
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  std::vector<std::string> kinds;
  if (profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls).ok()) {
    for (std::string_view k : kCountedSyscalls) {
      if (profiling::HasSyscallTracepoint(k)) kinds.emplace_back(k);
    }
  }
  say("calibrate: starting the real server");
  RealRows rows;
  absl::StatusOr<std::unique_ptr<pgreal::PgServers>> servers = StartReal(o, kinds, rows);
  if (!servers.ok()) return servers.status();
  pgreal::PgServers& pg = **servers;
  // The fit's targets: `fit_rounds` measurements of each size at one
  // client, alternating, so that the fit chases no one run's noise; then
  // one profile of each.
  for (int64_t round = 0; round < o.fit_rounds; ++round) {
    for (size_t i : rows.one_client) {
      say(absl::StrCat("calibrate: measuring ", pg.target(i).label, " (", round + 1, "/", o.fit_rounds, ")"));
      if (absl::Status s = pg.Measure(i); !s.ok()) return s;
    }
  }
  say("calibrate: profiling the real server (perf record)");
  if (absl::Status s = pg.Profile(/*only_clients=*/1); !s.ok()) return s;
  for (size_t i : rows.one_client) {
    if (pg.target(i).profiles.empty()) return absl::InternalError(absl::StrCat(pg.target(i).label, ": no profile was recorded"));
  }
  const Weighing real_target = RealFrom(pg.target(rows.fit), 0);

  CalibrationResult result;
  result.server_label = pg.target(rows.fit).key.Label({});
  result.server_version = pg.target(rows.fit).installation.version;
  result.server_build = pg.target(rows.fit).installation.build;
  absl::StatusOr<std::vector<std::string>> libs = MappedLibraries(pg.postmaster_pid(rows.fit));
  if (!libs.ok()) return libs.status();
  result.weight.libraries = *libs;
  StartingWeight(pg, rows.fit, result);
  if (absl::Status s = FitMock(o, kinds, real_target, result, say); !s.ok()) return s;
  result.weight.fitted = {{"server", result.server_label},
                          {"server_version", result.server_version},
                          {"server_build", result.server_build},
                          {"shared_buffers_bytes", o.fit_shared_buffers},
                          {"connections", o.connections},
                          {"fit_rounds", o.fit_rounds},
                          {"iterations", o.iterations},
                          {"real_server_cpu_us", real_target.cpu_us},
                          {"real_server_minor_faults", real_target.minor_faults}};
  say("calibrate: real and mock side by side");
  if (absl::Status s = SideBySide(o, kinds, pg, rows, result); !s.ok()) return s;
  absl::StatusOr<pgreal::PgResult> finished = pg.Finish();
  if (!finished.ok()) return finished.status();
  NoteUnmakeableSyscalls(result);
  return result;
}

}  // namespace backendlab::calibrate
