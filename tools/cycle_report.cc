// What `cycle`, `compare` and `profile` print and write about a cycle: its
// configuration, summary, phase table, incidents and exit status.
#include "tools/cycle_report.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "buffers/exit_check.h"
#include "buffers/shared_buffers.h"
#include "catcache/bucket_allocator.h"
#include "waits/wait_set.h"
#include "tools/server_columns.h"

namespace backendlab::tools {

std::string ConfigLine(const lifecycle::CycleOptions& o, bool with_configuration) {
  const lifecycle::BackendConfig& b = o.backend;
  const std::string configuration =
      with_configuration
          ? absl::StrCat(", layout ", std::string(buffers::LayoutName(b.layout)), ", exit-check ",
                         std::string(buffers::ExitCheckPolicyName(b.exit_check)), ", shared_buffers ",
                         buffers::FormatSize(b.shared_buffers.bytes), ", catcache ",
                         std::string(catcache::BucketStrategyName(b.catcache)), ", syscache ", b.syscache)
          : std::string();
  const std::string clients =
      with_configuration ? absl::StrCat(o.clients, o.clients == 1 ? " client, " : " clients, ") : std::string();
  return absl::StrCat(std::string(lifecycle::ModeName(o.mode)), " mode",
                      o.mode == lifecycle::Mode::kThread
                          ? absl::StrCat(" (", std::string(lifecycle::ThreadMemoryName(o.thread_memory)), " memory)")
                          : o.mode == lifecycle::Mode::kPrefork ? absl::StrCat(" (pool ", lifecycle::PoolSize(o), ")")
                          : o.reap != lifecycle::Reap::kAny
                              ? absl::StrCat(" (reaped by ", std::string(lifecycle::ReapName(o.reap)), ")")
                              : std::string(),
                      configuration, ", ", clients,
                      o.connections > 0 ? absl::StrCat(o.connections, " connections")
                                        : absl::StrCat(absl::ToInt64Milliseconds(o.duration), " ms"),
                      " (+", o.warmup, " warm-up), work ", b.work_pins, " pins + ", b.work_lookups, " lookups",
                      ", exit scan ", std::string(buffers::ScanKernelName(b.exit_kernel)),
                      b.queries > 0 ? absl::StrCat(" + ", b.queries, " queries (", std::string(waits::WaitStrategyName(b.wait)), " wait)")
                                    : std::string(),
                      b.weight ? absl::StrCat("; backend profile ", b.weight_source.empty() ? "(given)" : b.weight_source)
                               : std::string());
}

nlohmann::json ConfigJson(const lifecycle::CycleOptions& o) {
  const lifecycle::BackendConfig& b = o.backend;
  return {{"mode", lifecycle::ModeName(o.mode)},
          {"thread_memory", o.mode == lifecycle::Mode::kThread ? nlohmann::json(lifecycle::ThreadMemoryName(o.thread_memory))
                                                                 : nlohmann::json(nullptr)},
          {"pool", o.mode == lifecycle::Mode::kPrefork ? nlohmann::json(lifecycle::PoolSize(o)) : nlohmann::json(nullptr)},
          {"reap", o.mode == lifecycle::Mode::kFork ? nlohmann::json(lifecycle::ReapName(o.reap)) : nlohmann::json(nullptr)},
          {"layout", buffers::LayoutName(b.layout)},
          {"exit_check", buffers::ExitCheckPolicyName(b.exit_check)},
          {"scan_kernel", buffers::ScanKernelName(b.exit_kernel)},
          {"shared_buffers_bytes", b.shared_buffers.bytes},
          {"nbuffers", b.shared_buffers.nbuffers},
          {"catcache", catcache::BucketStrategyName(b.catcache)},
          {"syscache", b.syscache},
          {"clients", o.clients},
          {"connections", o.connections},
          {"duration_ms", absl::ToInt64Milliseconds(o.duration)},
          {"warmup", o.warmup},
          {"work_pins", b.work_pins},
          {"work_lookups", b.work_lookups},
          {"queries", b.queries},
          {"backend_profile", b.weight ? nlohmann::json(b.weight_source) : nlohmann::json(nullptr)},
          {"backend_weight", b.weight ? lifecycle::BackendWeightToJson(*b.weight) : nlohmann::json(nullptr)},
          // No queries, no waits: the strategy would be a setting that did nothing.
          {"wait", b.queries > 0 ? nlohmann::json(waits::WaitStrategyName(b.wait)) : nlohmann::json(nullptr)},
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
          {"query_us_p50", s.query_us.median},
          {"query_us_p99", s.query_us.p99},
          {"baseline_forks_per_second", s.baseline_forks_per_second},
          {"connections", r.connections},
          {"failed_connections", r.failed_connections},
          {"backends_exited", s.exited},
          {"backends_crashed", s.crashed},
          {"backends_failed", s.failed},
          {"backends_stopped", r.backends.stopped},
          {"warmup_backends_crashed", r.backends.warmup_crashed},
          {"warmup_backends_failed", r.backends.warmup_failed},
          {"leaks_reported", s.leaks},
          {"wait_us_p50", s.wait_us.median},
          {"lifetime_us_p50", s.lifetime_us.median},
          {"syscalls_counted", r.syscalls_counted},
          {"interrupted", r.interrupted},
          {"replaced", r.replaced},
          {"pool_outside_cpu_us", r.pool_outside_cpu_ns >= 0 ? nlohmann::json(r.pool_outside_cpu_ns / 1e3) : nlohmann::json(nullptr)}};
}

Report PhaseReport(const lifecycle::CycleSummary& s, std::span<const profiling::PerfEvent> counters,
                   lifecycle::BackendKind kind) {
  std::vector<Column> columns = {{"phase", "phase"},
                                 {"backends", "backends", 0},
                                 {"wall_us_p50", "median us", 1},
                                 {"wall_us_p99", "p99 us", 1},
                                 {"cpu_us", "cpu us", 1},
                                 {"minor_faults", "minor faults", 0},
                                 {"major_faults", "major faults", 0},
                                 {"syscalls", "syscalls", 0}};
  std::vector<std::pair<profiling::PerfEvent, std::string>> extra;  // each counter and its key
  for (profiling::PerfEvent e : counters) {
    if (e == profiling::PerfEvent::kSyscalls) continue;  // it has its column
    std::string key(profiling::PerfEventName(e));
    std::replace(key.begin(), key.end(), '-', '_');
    columns.push_back({key, std::string(profiling::PerfEventName(e)), 0});
    extra.emplace_back(e, key);
  }
  Report report(std::move(columns));
  for (lifecycle::Phase p : lifecycle::kAllPhases) {
    const lifecycle::PhaseStats& ps = s.phases[static_cast<int>(p)];
    Report::Row row = report.NewRow();
    row.Set("phase", std::string(lifecycle::PhaseName(p, kind))).Set("backends", static_cast<int64_t>(ps.wall_us.count));
    if (ps.wall_us.count > 0) {
      row.Set("wall_us_p50", ps.wall_us.median)
          .Set("wall_us_p99", ps.wall_us.p99)
          .Set("cpu_us", ps.cpu_us)
          .Set("minor_faults", ps.minor_faults)
          .Set("major_faults", ps.major_faults)
          .Set("syscalls", ps.syscalls < 0 ? Cell(std::monostate{}) : Cell(ps.syscalls));
      for (const auto& [e, key] : extra) {
        const double v = ps.events[static_cast<size_t>(e)];
        row.Set(key, v < 0 ? Cell(std::monostate{}) : Cell(v));
      }
    }
    report.AddRow(std::move(row));
  }
  return report;
}

void PrintServerUsage(const lifecycle::CycleResult& result, int64_t hold, std::ostream& out) {
  const ServerUsage& u = result.server;
  if (u.connections <= 0) return;
  const PerConnection per = PerConnectionOf(u);
  out << absl::StrFormat("server per connection: CPU %.0f us (user %.0f, sys %.0f), %.0f faults", per.cpu_us,
                         per.user_us, per.system_us, per.minor_faults + per.major_faults);
  if (per.postmaster_cpu_us > 0) {
    out << absl::StrFormat("; the postmaster's own %.1f us: a ceiling of %.0f conn/s on one core", per.postmaster_cpu_us,
                           CeilingOf(per.postmaster_cpu_us));
  }
  out << absl::StrFormat(" (%d connections, warm-up included)\n", u.connections);
  if (hold > 0 && result.hold_open_ns >= 0) {
    out << absl::StrFormat("held: %d connections opened in %.1f ms (%.3f ms each), idle while the loop ran", hold,
                           result.hold_open_ns / 1e6, result.hold_open_ns / 1e6 / static_cast<double>(hold));
    if (result.held_memory) {
      const ProcessMemory& m = *result.held_memory;
      out << absl::StrFormat("; each held backend: private %d kB, PSS %d kB, RSS %d kB, page tables %d kB", m.private_kb,
                             m.pss_kb, m.rss_kb, m.page_tables_kb);
    }
    out << "\n  (the server's figures are the loop's connections beside them; the held backends' own lives are not counted)\n";
  }
  out << "\n";
}

nlohmann::json ServerUsageJson(const lifecycle::CycleResult& result, int64_t hold) {
  const ServerUsage& u = result.server;
  if (u.connections <= 0) return nullptr;
  nlohmann::json j = ServerFiguresJson(u);
  j["hold"] = hold;
  if (hold > 0 && result.hold_open_ns >= 0) j["hold_open_ms"] = result.hold_open_ns / 1e6;
  if (result.held_memory) {
    j["held_rss_kb"] = result.held_memory->rss_kb;
    j["held_pss_kb"] = result.held_memory->pss_kb;
    j["held_private_kb"] = result.held_memory->private_kb;
    j["held_page_tables_kb"] = result.held_memory->page_tables_kb;
  }
  return j;
}

void PrintIncidents(const lifecycle::CycleResult& result, std::ostream& out) {
  int printed = 0;
  constexpr int kMaxLines = 8;
  for (const lifecycle::BackendRecord& r : result.backends.incidents) {
    if (printed >= kMaxLines) break;
    if (r.outcome == lifecycle::BackendOutcome::kCrashed || r.outcome == lifecycle::BackendOutcome::kFailed) {
      out << lifecycle::DescribeEnd(r) << "\n";
      ++printed;
    }
    for (int i = 0; i < r.leaks_found && i < lifecycle::kMaxReportedLeaks && printed < kMaxLines; ++i, ++printed) {
      out << "backend " << r.pid << ": "
          << buffers::FormatLeakWarning({static_cast<buffers::BufferId>(r.leak_buffers[i]), r.leak_counts[i]}) << "\n";
    }
  }
}

}  // namespace backendlab::tools
