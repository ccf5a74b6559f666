// `compare`'s matrix, baseline and table.
#include "tools/compare_matrix.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "buffers/exit_check.h"
#include "catcache/bucket_allocator.h"
#include "base/statistics.h"
#include "lifecycle/cycle_summary.h"
#include "tools/cycle_flags.h"

namespace backendlab::tools {
namespace {

// The values of list flag `name`, each checked by `parse`, which returns the
// value and stores it; an equal value given twice under another spelling
// (1GB,1024MB) is as much a repeat as the same word twice.
template <typename T>
absl::StatusOr<std::vector<T>> ParseList(const Flags& flags, std::string_view name,
                                         std::function<absl::StatusOr<T>(std::string_view)> parse,
                                         std::function<std::string(const T&)> name_of) {
  absl::StatusOr<std::vector<std::string>> items = flags.GetList(name);
  if (!items.ok()) return items.status();
  std::vector<T> values;
  std::vector<std::string> names;
  for (const std::string& item : *items) {
    absl::StatusOr<T> v = parse(item);
    if (!v.ok()) return v.status();
    const std::string canonical = name_of(*v);
    if (std::find(names.begin(), names.end(), canonical) != names.end()) {
      return absl::InvalidArgumentError(absl::StrCat("flag ", Quoted("--" + std::string(name)), " lists ", Quoted(canonical), " twice"));
    }
    names.push_back(canonical);
    values.push_back(*std::move(v));
  }
  return values;
}

bool Matches(const CompareConfig& c, const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (c.names[i] != names[i]) return false;
  }
  return true;
}

// --baseline: "layout/exit-check[/catcache[/syscache]]", each a known name.
absl::StatusOr<std::vector<std::string>> ParseBaseline(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, '/');
  if (parts.size() < 2 || parts.size() > kNamedDimensions) {
    return absl::InvalidArgumentError(
        absl::StrCat("--baseline=", Quoted(text), ": expected layout/exit-check[/catcache[/syscache]], e.g. array/always"));
  }
  const std::function<absl::Status(std::string_view)> kChecks[kNamedDimensions] = {
      [](std::string_view v) { return buffers::ParseLayout(v).status(); },
      [](std::string_view v) { return buffers::ParseExitCheckPolicy(v).status(); },
      [](std::string_view v) { return catcache::ParseBucketStrategy(v).status(); },
      [](std::string_view v) { return ParseSyscacheName(v).status(); },
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    if (absl::Status s = kChecks[i](parts[i]); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--baseline=", Quoted(text), ": ", s.message()));
    }
  }
  return parts;
}

}  // namespace

absl::StatusOr<CompareMatrix> BuildCompareMatrix(const Flags& flags, const lifecycle::CycleOptions& base, bool aa) {
  CompareMatrix m;
  auto layouts = ParseList<buffers::Layout>(flags, "layouts", buffers::ParseLayout,
                                            [](const buffers::Layout& v) { return std::string(buffers::LayoutName(v)); });
  if (!layouts.ok()) return layouts.status();
  auto policies = ParseList<buffers::ExitCheckPolicy>(
      flags, "exit-checks", buffers::ParseExitCheckPolicy,
      [](const buffers::ExitCheckPolicy& v) { return std::string(buffers::ExitCheckPolicyName(v)); });
  if (!policies.ok()) return policies.status();
  auto sizes = ParseList<buffers::SharedBuffers>(flags, "shared-buffers", buffers::ParseSharedBuffers,
                                                 [](const buffers::SharedBuffers& v) { return buffers::FormatSize(v.bytes); });
  if (!sizes.ok()) return sizes.status();
  auto catcaches = ParseList<catcache::BucketStrategy>(
      flags, "catcaches", catcache::ParseBucketStrategy,
      [](const catcache::BucketStrategy& v) { return std::string(catcache::BucketStrategyName(v)); });
  if (!catcaches.ok()) return catcaches.status();
  auto syscaches = ParseList<std::string>(flags, "syscaches", ParseSyscacheName, [](const std::string& v) { return v; });
  if (!syscaches.ok()) return syscaches.status();
  absl::StatusOr<std::vector<int64_t>> clients = flags.GetIntList("clients", 1, lifecycle::kMaxClients);
  if (!clients.ok()) return clients.status();
  m.sizes = *sizes;
  for (int64_t n : *clients) m.clients.push_back(static_cast<int>(n));
  {  // the most clients against a round's connections and the open-file limit
    lifecycle::CycleOptions most = base;
    most.clients = *std::max_element(m.clients.begin(), m.clients.end());
    if (absl::Status s = lifecycle::ValidateCycleOptions(most); !s.ok()) return s;
  }

  // The named configurations, then a copy of them per shared_buffers and clients.
  std::vector<CompareConfig> named;
  for (buffers::Layout layout : *layouts) {
    for (buffers::ExitCheckPolicy policy : *policies) {
      for (catcache::BucketStrategy strategy : *catcaches) {
        for (const std::string& syscache : *syscaches) {
          CompareConfig c;
          c.options = base;
          lifecycle::BackendConfig& b = c.options.backend;
          b.layout = layout;
          b.exit_check = policy;
          b.catcache = strategy;
          b.syscache = syscache;
          c.names = {std::string(buffers::LayoutName(layout)), std::string(buffers::ExitCheckPolicyName(policy)),
                     std::string(catcache::BucketStrategyName(strategy)), syscache};
          c.label = absl::StrCat(c.names[0], "/", c.names[1], catcaches->size() > 1 ? "/" + c.names[2] : "",
                                 syscaches->size() > 1 ? "/" + c.names[3] : "");
          named.push_back(std::move(c));
        }
      }
    }
  }
  for (const buffers::SharedBuffers& size : *sizes) {
    for (int n : m.clients) {
      for (const CompareConfig& proto : named) {
        CompareConfig c = proto;
        c.options.backend.shared_buffers = size;
        c.options.clients = n;
        m.configs.push_back(std::move(c));
      }
    }
  }

  if (flags.Has("baseline")) {
    absl::StatusOr<std::vector<std::string>> baseline = ParseBaseline(flags.Get("baseline"));
    if (!baseline.ok()) return baseline.status();
    m.baseline = *std::move(baseline);
    if (std::none_of(m.configs.begin(), m.configs.end(), [&](const CompareConfig& c) { return Matches(c, m.baseline); })) {
      return absl::InvalidArgumentError(absl::StrCat("--baseline=", Quoted(flags.Get("baseline")),
                                                     " is not in the matrix (see --layouts, --exit-checks, --catcaches, --syscaches)"));
    }
  } else {
    m.baseline = {"array", "always"};  // PostgreSQL 9.0, when the matrix has it
    if (std::none_of(m.configs.begin(), m.configs.end(), [&](const CompareConfig& c) { return Matches(c, m.baseline); })) {
      m.baseline = {m.configs.front().names[0], m.configs.front().names[1]};
    }
  }
  m.baseline_label = absl::StrJoin(m.baseline, "/");
  if (aa) {  // a copy of every configuration that is its own baseline, right after it
    std::vector<CompareConfig> with_copies;
    for (CompareConfig& c : m.configs) {
      const bool own_baseline = Matches(c, m.baseline);
      with_copies.push_back(c);
      if (!own_baseline) continue;
      CompareConfig copy = c;
      copy.aa = true;
      copy.label = c.label + "#2";
      with_copies.push_back(std::move(copy));
    }
    m.configs = std::move(with_copies);
  }
  return m;
}

const CompareConfig* BaselineOf(const CompareMatrix& matrix, const CompareConfig& config) {
  std::vector<std::string> names(config.names.begin(), config.names.end());
  std::copy(matrix.baseline.begin(), matrix.baseline.end(), names.begin());
  for (const CompareConfig& b : matrix.configs) {
    if (b.aa) continue;
    if (b.options.backend.shared_buffers.bytes == config.options.backend.shared_buffers.bytes &&
        b.options.clients == config.options.clients && Matches(b, names)) {
      return &b;
    }
  }
  return nullptr;
}

const CompareConfig* BaselineOfPg(const CompareMatrix& matrix, const pgreal::PgTargetResult& target) {
  for (const CompareConfig& c : matrix.configs) {
    if (c.aa || static_cast<int64_t>(c.options.backend.shared_buffers.bytes) != target.shared_buffers_bytes ||
        c.options.clients != target.clients) {
      continue;
    }
    if (std::equal(matrix.baseline.begin(), matrix.baseline.end(), c.names.begin())) return &c;
  }
  return nullptr;
}

void AddRound(CompareConfig& c, const lifecycle::CycleResult& round) {
  const lifecycle::CycleSummary s = lifecycle::Summarize(round);
  c.rates.push_back(s.connections_per_second);
  c.server_rounds.push_back(round.server);
  c.exit_check_us.push_back(s.phases[static_cast<int>(lifecycle::Phase::kExitCheck)].wall_us.median);
  lifecycle::MergeRound(round, c.merged);
}

namespace {

// The ratio a/b over paired rounds as an estimate, held to `precision`;
// none where no round has both figures (an exit check compiled out takes 0 us).
std::optional<Estimate> RatioEstimateOf(const std::vector<double>& a, const std::vector<double>& b, Better better,
                                        double precision) {
  const std::optional<RatioEstimate> r = PairedRatioOfCommonRounds(a, b, better);
  if (!r) return std::nullopt;
  return EstimateOf(*r, precision);
}

// The figures of a row whose rounds are `rates` and `server`, against a
// baseline's (null: the row is the baseline itself), as the table's cells.
// `widest` grows to the row's widest ratio's relative half-width.
RowStats StatsOf(const std::vector<double>& rates, const std::vector<ServerUsage>& server,
                 const CompareConfig* baseline, double precision, double& widest) {
  const MeasuredRounds row{rates, server};
  std::optional<MeasuredRounds> base;
  if (baseline != nullptr) base = MeasuredRounds{baseline->rates, baseline->server_rounds};
  const ServerStats s = ComputeServerStats(row, base ? &*base : nullptr);
  widest = std::max(widest, WorstHalfWidth(std::span<const ServerStats>(&s, 1)));
  RowStats r;
  r.rate = EstimateOf(s.rate);
  r.has_cpu = s.has_cpu;
  if (s.has_cpu) r.cpu_us = EstimateOf(s.cpu_us);
  if (s.rate_vs_baseline) r.rate_vs_baseline = EstimateOf(*s.rate_vs_baseline, precision);
  if (s.cpu_vs_baseline) r.cpu_vs_baseline = EstimateOf(*s.cpu_vs_baseline, precision);
  return r;
}

}  // namespace

CompareStats ComputeCompareStats(const CompareMatrix& matrix, std::span<const pgreal::PgTargetResult> targets,
                                 double precision) {
  CompareStats stats;
  stats.rounds = matrix.configs.empty() ? 0 : static_cast<int64_t>(matrix.configs.front().rates.size());
  for (const CompareConfig& c : matrix.configs) {
    const CompareConfig* b = BaselineOf(matrix, c);
    RowStats r = StatsOf(c.rates, c.server_rounds, b == &c ? nullptr : b, precision, stats.worst_half_width);
    r.is_baseline = b == &c;
    if (b != nullptr && b != &c) {
      r.exit_vs_baseline = RatioEstimateOf(c.exit_check_us, b->exit_check_us, Better::kLower, 0);
    }
    if (c.aa) {
      const bool differs = (r.cpu_vs_baseline && r.cpu_vs_baseline->verdict != Verdict::kSame) ||
                           (r.rate_vs_baseline && r.rate_vs_baseline->verdict != Verdict::kSame);
      if (differs) stats.aa_failures.push_back(RowName(matrix, c));
    }
    stats.mock.push_back(std::move(r));
  }
  for (const pgreal::PgTargetResult& t : targets) {
    RowStats r = StatsOf(t.rates, t.server_rounds, BaselineOfPg(matrix, t), precision, stats.worst_half_width);
    stats.pg.push_back(std::move(r));
  }
  stats.precise = precision <= 0 || stats.worst_half_width <= precision;
  return stats;
}

namespace {

// The clients column is in the text where the run had more than one.
std::vector<Column> CompareColumns(bool clients_in_text) {
  return {{"config", "config"},
          {"layout", ""},
          {"exit_check", ""},
          {"catcache", ""},
          {"syscache", ""},
          {"aa", ""},
          {"shared_buffers", "shared_buffers"},
          {"shared_buffers_bytes", ""},
          {"clients", clients_in_text ? "clients" : ""},
          {"cpu_us_per_connection", "CPU us/conn", 0, ColumnKind::kMedian},
          {"cpu_us_per_connection_vs_baseline", "CPU vs base", 2, ColumnKind::kRatio},
          {"connections_per_second", "conn/s", 0, ColumnKind::kMedian},
          {"connections_per_second_vs_baseline", "conn/s vs base", 2, ColumnKind::kRatio},
          {"vs_fork_floor", "x floor", 2},
          {"exit_check_us", "exit us", 1},
          {"exit_check_minor_faults", "exit faults", 0},
          {"exit_check_share", "exit % CPU", 1},
          {"exit_check_us_vs_baseline", "exit vs base", 2, ColumnKind::kRatio},
          {"teardown_us", "", 1},
          {"reap_us", "", 1},
          {"backends_crashed", ""},
          {"leaks_reported", ""},
          // Each round's figures, in round order, for a reader to pair again.
          {"rounds_cpu_us_per_connection", ""},
          {"rounds_connections_per_second", ""},
          {"rounds_exit_check_us", ""}};
}

Cell RatioCell(const std::optional<Estimate>& e, bool is_baseline) {
  if (e) return *e;
  if (is_baseline) return 1.0;  // the baseline against itself: 1 by definition, no interval to give
  return std::monostate{};
}

// The cells every row starts with: names, A/A, size, clients, cost and
// rate with their ratios.
std::vector<Cell> LeadingCells(const std::array<std::string, 5>& names, bool aa, uint64_t bytes, int clients,
                               const RowStats& r) {
  std::vector<Cell> row;
  for (const std::string& text : names) row.emplace_back(std::in_place_type<std::string>, text);
  row.push_back(Boolean{aa});
  row.emplace_back(std::in_place_type<std::string>, buffers::FormatSize(bytes));
  row.push_back(static_cast<int64_t>(bytes));
  row.push_back(static_cast<int64_t>(clients));
  row.push_back(r.has_cpu ? Cell(r.cpu_us) : Cell(std::monostate{}));
  row.push_back(r.has_cpu ? RatioCell(r.cpu_vs_baseline, r.is_baseline) : Cell(std::monostate{}));
  row.push_back(r.rate);
  row.push_back(RatioCell(r.rate_vs_baseline, r.is_baseline));
  return row;
}

}  // namespace

Report CompareReport(const CompareMatrix& matrix, const CompareStats& stats, std::span<const pgreal::PgTargetResult> targets) {
  const std::vector<Column> columns = CompareColumns(matrix.clients.size() > 1);
  Report report(columns);
  for (size_t i = 0; i < matrix.configs.size(); ++i) {
    const CompareConfig& c = matrix.configs[i];
    const RowStats& r = stats.mock[i];
    const lifecycle::CycleSummary s = lifecycle::Summarize(c.merged);
    const lifecycle::PhaseStats& exit = s.phases[static_cast<int>(lifecycle::Phase::kExitCheck)];
    std::vector<Cell> row = LeadingCells({c.label, c.names[0], c.names[1], c.names[2], c.names[3]}, c.aa,
                                         c.options.backend.shared_buffers.bytes, c.options.clients, r);
    row.push_back(s.baseline_forks_per_second > 0 ? Cell(r.rate.value / s.baseline_forks_per_second) : Cell(std::monostate{}));
    row.push_back(exit.wall_us.median);
    row.push_back(exit.minor_faults);
    // The exit check's share of a backend's CPU, fork (the postmaster's
    // fork() included) to reap, in percent: what a profile of the loop's
    // server side shows (the 2010 connection-overhead thread's 18 %). Means, so
    // that the shares add up.
    {
      double all = 0;
      for (const lifecycle::PhaseHistograms& p : c.merged.backends.phases) all += p.cpu_ns.mean();
      const double check = c.merged.backends.phases[static_cast<int>(lifecycle::Phase::kExitCheck)].cpu_ns.mean();
      row.push_back(all > 0 ? Cell(100 * check / all) : Cell(std::monostate{}));
    }
    row.push_back(RatioCell(r.exit_vs_baseline, r.is_baseline));
    row.push_back(s.phases[static_cast<int>(lifecycle::Phase::kTeardown)].wall_us.median);
    row.push_back(s.phases[static_cast<int>(lifecycle::Phase::kReap)].wall_us.median);
    row.push_back(s.crashed);
    row.push_back(s.leaks);
    row.push_back(Values(CpuUsByRound(c.server_rounds)));
    row.push_back(Values(c.rates));
    row.push_back(Values(c.exit_check_us));
    report.AddRow(std::move(row));
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    const pgreal::PgTargetResult& t = targets[i];
    const CompareConfig* baseline = BaselineOfPg(matrix, t);
    std::vector<Cell> row = LeadingCells({PgConfigLabel(t), "", "", "", ""}, false,
                                         static_cast<uint64_t>(t.shared_buffers_bytes), t.clients, stats.pg[i]);
    const double floor = baseline != nullptr ? lifecycle::Summarize(baseline->merged).baseline_forks_per_second : 0;
    row.push_back(floor > 0 ? Cell(stats.pg[i].rate.value / floor) : Cell(std::monostate{}));
    // A real backend's phases are `pg --profile`'s: the exit columns stay empty.
    for (size_t k = row.size(); k + 3 < columns.size(); ++k) row.push_back(std::monostate{});
    row.push_back(Values(CpuUsByRound(t.server_rounds)));
    row.push_back(Values(t.rates));
    row.push_back(std::monostate{});
    report.AddRow(std::move(row));
  }
  return report;
}

std::string ClientsText(int clients) { return absl::StrCat(clients, clients == 1 ? " client" : " clients"); }

std::string RowName(const CompareMatrix& matrix, const CompareConfig& c) {
  std::string name = absl::StrCat(c.label, " at ", buffers::FormatSize(c.options.backend.shared_buffers.bytes));
  if (matrix.clients.size() > 1) absl::StrAppend(&name, ", ", ClientsText(c.options.clients));
  return name;
}

std::string PgConfigLabel(const pgreal::PgTargetResult& target) {
  return target.via.empty() ? absl::StrCat("pg", target.installation.major)
                            : absl::StrCat("pg", target.installation.major, " via ", target.via);
}

}  // namespace backendlab::tools
