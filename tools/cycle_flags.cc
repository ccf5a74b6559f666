// Flags and reports shared by `cycle` and `compare`.
#include "tools/cycle_flags.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "buffers/exit_check.h"
#include "buffers/shared_buffers.h"
#include "catcache/bucket_allocator.h"
#include "catcache/syscache_profile.h"
#include "base/interleaved.h"

namespace backendlab::tools {

absl::StatusOr<int64_t> ParseDurationMs(std::string_view text) {
  const std::string t(text);
  size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  int64_t n = 0;
  if (digits == 0 || !absl::SimpleAtoi(t.substr(0, digits), &n)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration ", Quoted(t), " (e.g. 10s, 500ms, 2m)"));
  }
  const std::string unit = t.substr(digits);
  constexpr int64_t kDayMs = 24 * 3600 * 1000;
  if (n > kDayMs) {  // checked before any multiplication can overflow
    return absl::InvalidArgumentError(absl::StrCat("invalid duration ", Quoted(t), ": must be > 0 and at most a day"));
  }
  int64_t ms;
  if (unit == "ms") {
    ms = n;
  } else if (unit == "s") {
    ms = n * 1000;
  } else if (unit == "m") {
    ms = n * 60'000;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration ", Quoted(t), ": unit must be ms, s or m"));
  }
  if (ms <= 0 || ms > kDayMs) {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration ", Quoted(t), ": must be > 0 and at most a day"));
  }
  return ms;
}

namespace {

// Parses flag `name`, when given, into *target; the parser's error otherwise.
template <typename T, typename Parse>
absl::Status ParseFlagInto(const Flags& flags, const char* name, Parse parse, T* target) {
  if (!flags.Has(name)) return absl::OkStatus();
  absl::StatusOr<T> value = parse(flags.Get(name));
  if (!value.ok()) return value.status();
  *target = *std::move(value);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ParseSyscacheName(std::string_view name) {
  if (absl::StatusOr<catcache::SyscacheProfile> p = catcache::BuiltinProfile(name); !p.ok()) return p.status();
  return std::string(name);
}

absl::StatusOr<lifecycle::CycleOptions> CycleOptionsFromFlags(const Flags& flags, bool with_configuration) {
  lifecycle::CycleOptions o;
  lifecycle::BackendConfig& b = o.backend;
  for (absl::Status s : {
           ParseFlagInto(flags, "mode", lifecycle::ParseMode, &o.mode),
           ParseFlagInto(flags, "syscache", ParseSyscacheName, &b.profile),
       }) {
    if (!s.ok()) return s;
  }
  if (with_configuration) {
    for (absl::Status s : {
             ParseFlagInto(flags, "layout", buffers::ParseLayout, &b.layout),
             ParseFlagInto(flags, "exit-check", buffers::ParseExitCheckPolicy, &b.exit_check),
             ParseFlagInto(flags, "shared-buffers", buffers::ParseSharedBuffers, &b.shared_buffers),
             ParseFlagInto(flags, "catcache", catcache::ParseBucketStrategy, &b.catcache),
         }) {
      if (!s.ok()) return s;
    }
  }
  struct IntFlag {
    const char* name;
    int64_t min, max;
    int64_t* target;
  };
  int64_t clients = 1, leak = 0;
  const IntFlag ints[] = {
      {"clients", 1, 1024, &clients},
      {"connections", 1, 100'000'000, &o.connections},
      {"warmup", 0, 1'000'000, &o.warmup},
      {"work-pins", 0, 1'000'000'000, &b.work_pins},
      {"work-lookups", 0, 100'000'000, &b.work_lookups},
      {"leak-pins", 0, 1000, &leak},
      {"kill-backend", -1, INT64_MAX, &b.kill_backend},
  };
  for (const IntFlag& f : ints) {
    if (!flags.Has(f.name)) continue;
    absl::StatusOr<int64_t> v = flags.GetInt(f.name, f.min, f.max);
    if (!v.ok()) return v.status();
    *f.target = *v;
  }
  o.clients = static_cast<int>(clients);
  b.leak_pins = static_cast<int32_t>(leak);
  if (flags.Has("duration")) {
    if (flags.Has("connections")) return absl::InvalidArgumentError("give --connections or --duration, not both");
    absl::StatusOr<int64_t> ms = ParseDurationMs(flags.Get("duration"));
    if (!ms.ok()) return ms.status();
    o.duration_ms = *ms;
    o.connections = 0;
  } else if (!flags.Has("connections")) {
    o.connections = 500;
  }
  if (flags.Has("syscalls")) {
    absl::StatusOr<bool> on = flags.GetBool("syscalls");
    if (!on.ok()) return on.status();
    b.count_syscalls = *on;
  }
  if (flags.Has("counters")) {
    absl::StatusOr<std::vector<profiling::PerfEvent>> events = profiling::ParsePerfEventList(flags.Get("counters"));
    if (!events.ok()) return events.status();
    b.counters = *std::move(events);
  }
  if (absl::Status s = lifecycle::ValidateCycleOptions(o); !s.ok()) return s;
  return o;
}

std::string ConfigLine(const lifecycle::CycleOptions& o, bool with_configuration) {
  const lifecycle::BackendConfig& b = o.backend;
  const std::string configuration =
      with_configuration
          ? absl::StrCat(", layout ", std::string(buffers::LayoutName(b.layout)), ", exit-check ",
                         std::string(buffers::ExitCheckPolicyName(b.exit_check)), ", shared_buffers ",
                         buffers::FormatSize(b.shared_buffers.bytes), ", catcache ",
                         std::string(catcache::BucketStrategyName(b.catcache)), ", syscache ", b.profile)
          : std::string();
  return absl::StrCat(std::string(lifecycle::ModeName(o.mode)), " mode", configuration, ", ", o.clients,
                      o.clients == 1 ? " client, " : " clients, ",
                      o.connections > 0 ? absl::StrCat(o.connections, " connections")
                                        : absl::StrCat(o.duration_ms, " ms"),
                      " (+", o.warmup, " warm-up), work ", b.work_pins, " pins + ", b.work_lookups, " lookups");
}

nlohmann::json ConfigJson(const lifecycle::CycleOptions& o) {
  const lifecycle::BackendConfig& b = o.backend;
  return {{"mode", lifecycle::ModeName(o.mode)},
          {"layout", buffers::LayoutName(b.layout)},
          {"exit_check", buffers::ExitCheckPolicyName(b.exit_check)},
          {"shared_buffers_bytes", b.shared_buffers.bytes},
          {"nbuffers", b.shared_buffers.nbuffers},
          {"catcache", catcache::BucketStrategyName(b.catcache)},
          {"syscache", b.profile},
          {"clients", o.clients},
          {"connections", o.connections},
          {"duration_ms", o.duration_ms},
          {"warmup", o.warmup},
          {"work_pins", b.work_pins},
          {"work_lookups", b.work_lookups},
          {"leak_pins", b.leak_pins},
          {"counters", [&] {
             nlohmann::json names = nlohmann::json::array();
             for (profiling::PerfEvent e : b.counters) names.push_back(profiling::PerfEventName(e));
             return names;
           }()}};
}

nlohmann::json SummaryJson(const lifecycle::CycleSummary& s, const lifecycle::CycleResult& r) {
  return {{"connections_per_second", s.connections_per_second},
          {"connect_us_p50", s.connect_us.median},
          {"connect_us_p90", s.connect_us.p90},
          {"connect_us_p99", s.connect_us.p99},
          {"baseline_forks_per_second", s.baseline_forks_per_second},
          {"connections", r.connections},
          {"failed_connections", r.failed_connections},
          {"backends_exited", s.exited},
          {"backends_crashed", s.crashed},
          {"leaks_reported", s.leaks},
          {"wait_us_p50", s.wait_us.median},
          {"lifetime_us_p50", s.lifetime_us.median},
          {"syscalls_available", r.syscalls_counted},
          {"interrupted", r.interrupted}};
}

Report PhaseReport(const lifecycle::CycleSummary& s, std::span<const profiling::PerfEvent> counters) {
  std::vector<Column> columns = {{"phase", "phase"},
                                 {"backends", "backends", 0},
                                 {"median_us", "median us", 1},
                                 {"p99_us", "p99 us", 1},
                                 {"cpu_us", "cpu us", 1},
                                 {"minor_faults", "minor faults", 0},
                                 {"major_faults", "major faults", 0},
                                 {"syscalls", "syscalls", 0}};
  std::vector<profiling::PerfEvent> extra;
  for (profiling::PerfEvent e : counters) {
    if (e == profiling::PerfEvent::kSyscalls) continue;  // it has its column
    std::string key(profiling::PerfEventName(e));
    std::replace(key.begin(), key.end(), '-', '_');
    columns.push_back({key, std::string(profiling::PerfEventName(e)), 0});
    extra.push_back(e);
  }
  Report report(std::move(columns));
  for (lifecycle::Phase p : lifecycle::kAllPhases) {
    const lifecycle::PhaseStats& ps = s.phases[static_cast<int>(p)];
    std::vector<Cell> row;
    row.emplace_back(std::in_place_type<std::string>, lifecycle::PhaseName(p));
    row.push_back(static_cast<int64_t>(ps.wall_us.count));
    if (ps.wall_us.count == 0) {
      for (size_t i = 0; i < 6 + extra.size(); ++i) row.push_back(std::monostate{});
    } else {
      row.push_back(ps.wall_us.median);
      row.push_back(ps.wall_us.p99);
      row.push_back(ps.cpu_us);
      row.push_back(ps.minor_faults);
      row.push_back(ps.major_faults);
      row.push_back(ps.syscalls < 0 ? Cell(std::monostate{}) : Cell(ps.syscalls));
      for (profiling::PerfEvent e : extra) {
        const double v = ps.events[static_cast<size_t>(e)];
        row.push_back(v < 0 ? Cell(std::monostate{}) : Cell(v));
      }
    }
    report.AddRow(std::move(row));
  }
  return report;
}

absl::Status RunOutcome(const lifecycle::CycleResult& result, const lifecycle::CycleSummary& s) {
  if (result.interrupted) return StoppedStatus();
  const int64_t crashed = s.crashed + result.backends.warmup_crashed;
  if (crashed > 0) return absl::AbortedError(absl::StrCat(crashed, " backend(s) crashed (see above)"));
  if (result.failed_connections > 0) {
    return absl::AbortedError(absl::StrCat(result.failed_connections, " connection(s) closed before \"ready\""));
  }
  if (result.connections == 0) return absl::AbortedError("no connection completed");
  return absl::OkStatus();
}

void PrintIncidents(const lifecycle::CycleResult& result, std::ostream& out) {
  int printed = 0;
  constexpr int kMaxLines = 8;
  for (const lifecycle::BackendRecord& r : result.backends.incidents) {
    if (printed >= kMaxLines) break;
    if (r.outcome == lifecycle::BackendOutcome::kCrashed) {
      std::string last_phase = "before init_buffers";
      for (lifecycle::Phase p : lifecycle::kAllPhases) {
        if (p != lifecycle::Phase::kReap && p != lifecycle::Phase::kFork && r.Done(p)) {
          last_phase = absl::StrCat("after ", std::string(lifecycle::PhaseName(p)));
        }
      }
      out << "backend " << r.pid << " (connection " << r.sequence << ") crashed: "
          << (r.signal ? absl::StrCat("killed by signal ", r.signal, " (", strsignal(r.signal), ")")
                       : absl::StrCat("exit code ", r.exit_status))
          << ", " << last_phase << "\n";
      ++printed;
    }
    for (int i = 0; i < r.leaks_found && i < lifecycle::kMaxReportedLeaks && printed < kMaxLines; ++i, ++printed) {
      out << "backend " << r.pid << ": "
          << buffers::FormatLeakWarning({static_cast<buffers::BufferId>(r.leak_buffers[i]), r.leak_counts[i]}) << "\n";
    }
  }
}

}  // namespace backendlab::tools
