// `compare`'s matrix, baseline and table.
#include "tools/compare_matrix.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "buffers/exit_check.h"
#include "catcache/bucket_allocator.h"
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

absl::StatusOr<CompareMatrix> BuildCompareMatrix(const Flags& flags, const lifecycle::CycleOptions& base) {
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
  m.sizes = *sizes;

  for (const buffers::SharedBuffers& size : *sizes) {
    for (buffers::Layout layout : *layouts) {
      for (buffers::ExitCheckPolicy policy : *policies) {
        for (catcache::BucketStrategy strategy : *catcaches) {
          for (const std::string& syscache : *syscaches) {
            CompareConfig c;
            c.options = base;
            lifecycle::BackendConfig& b = c.options.backend;
            b.layout = layout;
            b.exit_check = policy;
            b.shared_buffers = size;
            b.catcache = strategy;
            b.syscache = syscache;
            c.names = {std::string(buffers::LayoutName(layout)), std::string(buffers::ExitCheckPolicyName(policy)),
                       std::string(catcache::BucketStrategyName(strategy)), syscache};
            c.label = absl::StrCat(c.names[0], "/", c.names[1], catcaches->size() > 1 ? "/" + c.names[2] : "",
                                   syscaches->size() > 1 ? "/" + c.names[3] : "");
            m.configs.push_back(std::move(c));
          }
        }
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
  return m;
}

const CompareConfig* BaselineOf(const CompareMatrix& matrix, const CompareConfig& config) {
  std::vector<std::string> names(config.names.begin(), config.names.end());
  std::copy(matrix.baseline.begin(), matrix.baseline.end(), names.begin());
  for (const CompareConfig& b : matrix.configs) {
    if (b.options.backend.shared_buffers.bytes == config.options.backend.shared_buffers.bytes && Matches(b, names)) return &b;
  }
  return nullptr;
}

Report CompareReport(const CompareMatrix& matrix) {
  Report report({{"config", "config"},
                 {"layout", ""},
                 {"exit_check", ""},
                 {"catcache", ""},
                 {"syscache", ""},
                 {"shared_buffers", "shared_buffers"},
                 {"shared_buffers_bytes", ""},
                 {"connections_per_second", "conn/s", 1},
                 {"us_per_connection", "us/conn", 0},
                 {"vs_fork_floor", "x floor", 2},
                 {"exit_check_us", "exit_check us", 1},
                 {"exit_check_minor_faults", "exit faults", 0},
                 {"exit_check_share", "exit % of CPU", 1},
                 {"teardown_us", "teardown us", 1},
                 {"reap_us", "reap us", 1},
                 {"connections_per_second_vs_baseline", "conn/s vs base", 2},
                 {"exit_check_us_vs_baseline", "exit vs base", 2},
                 {"backends_crashed", ""},
                 {"leaks_reported", ""}});
  auto ratio = [](double a, double b) { return b > 0 ? Cell(a / b) : Cell(std::monostate{}); };
  for (const CompareConfig& c : matrix.configs) {
    const lifecycle::CycleSummary s = lifecycle::Summarize(c.merged);
    const double rate = Summarize(c.rates).median;
    const lifecycle::PhaseStats& exit = s.phases[static_cast<int>(lifecycle::Phase::kExitCheck)];
    std::vector<Cell> row;
    for (const std::string& text : {c.label, c.names[0], c.names[1], c.names[2], c.names[3],
                                    buffers::FormatSize(c.options.backend.shared_buffers.bytes)}) {
      row.emplace_back(std::in_place_type<std::string>, text);
    }
    row.push_back(static_cast<int64_t>(c.options.backend.shared_buffers.bytes));
    row.push_back(rate);
    row.push_back(rate > 0 ? Cell(1e6 / rate) : Cell(std::monostate{}));
    row.push_back(ratio(rate, s.baseline_forks_per_second));
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
    row.push_back(s.phases[static_cast<int>(lifecycle::Phase::kTeardown)].wall_us.median);
    row.push_back(s.phases[static_cast<int>(lifecycle::Phase::kReap)].wall_us.median);
    if (const CompareConfig* b = BaselineOf(matrix, c); b != nullptr) {
      const lifecycle::CycleSummary bs = lifecycle::Summarize(b->merged);
      row.push_back(ratio(rate, Summarize(b->rates).median));
      row.push_back(ratio(exit.wall_us.median, bs.phases[static_cast<int>(lifecycle::Phase::kExitCheck)].wall_us.median));
    } else {
      row.push_back(std::monostate{});
      row.push_back(std::monostate{});
    }
    row.push_back(s.crashed);
    row.push_back(s.leaks);
    report.AddRow(std::move(row));
  }
  return report;
}

std::string PgConfigLabel(const pgreal::PgTargetResult& target) {
  return target.via.empty() ? absl::StrCat("pg", target.installation.major)
                            : absl::StrCat("pg", target.installation.major, " via ", target.via);
}

void AddPgRows(Report& report, const CompareMatrix& matrix, std::span<const pgreal::PgTargetResult> targets) {
  auto ratio = [](double a, double b) { return b > 0 ? Cell(a / b) : Cell(std::monostate{}); };
  for (const pgreal::PgTargetResult& t : targets) {
    const double rate = Summarize(t.rates).median;
    const CompareConfig* baseline = nullptr;
    for (const CompareConfig& c : matrix.configs) {
      if (static_cast<int64_t>(c.options.backend.shared_buffers.bytes) != t.shared_buffers_bytes) continue;
      if (std::equal(matrix.baseline.begin(), matrix.baseline.end(), c.names.begin())) {
        baseline = &c;
        break;
      }
    }
    std::vector<Cell> row;
    for (const std::string& text : {PgConfigLabel(t), std::string(), std::string(), std::string(), std::string(),
                                    buffers::FormatSize(static_cast<uint64_t>(t.shared_buffers_bytes))}) {
      row.emplace_back(std::in_place_type<std::string>, text);
    }
    row.push_back(t.shared_buffers_bytes);
    row.push_back(rate);
    row.push_back(rate > 0 ? Cell(1e6 / rate) : Cell(std::monostate{}));
    row.push_back(baseline != nullptr ? ratio(rate, lifecycle::Summarize(baseline->merged).baseline_forks_per_second)
                                      : Cell(std::monostate{}));
    for (int i = 0; i < 5; ++i) row.push_back(std::monostate{});  // exit_check, its faults and share, teardown, reap
    row.push_back(baseline != nullptr ? ratio(rate, Summarize(baseline->rates).median) : Cell(std::monostate{}));
    for (int i = 0; i < 3; ++i) row.push_back(std::monostate{});  // exit vs base, crashed, leaks
    report.AddRow(std::move(row));
  }
}

}  // namespace backendlab::tools
