// `backendlab compare`: a matrix of configurations (layout x shared_buffers x
// catcache x exit-check), run round robin in several rounds so that drift on a
// shared machine hits every configuration alike; one table with ratios against
// a baseline, and an SVG chart of cost per connection against shared_buffers.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "buffers/exit_check.h"
#include "buffers/shared_buffers.h"
#include "catcache/bucket_allocator.h"
#include "lifecycle/cycle.h"
#include "lifecycle/cycle_summary.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/machine_header.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kFlags[] = {
    {"layouts", "array,bytes,hash", "refcount table layouts"},
    {"shared-buffers", "128MB,1GB,8GB", "shared_buffers sizes"},
    {"catcache", "palloc0", "catcache bucket strategies"},
    {"exit-check", "always,assert", "exit-check policies"},
    {"profile", "pg17", "syscache profile: pg90 or pg17"},
    {"mode", "fork", "fork or inproc"},
    {"clients", "1", "concurrent clients"},
    {"connections", "300", "measured connections per configuration, split over the rounds"},
    {"rounds", "3", "interleaved rounds"},
    {"warmup", "5", "warm-up connections per configuration and round"},
    {"work-pins", "20", "pin+unpin pairs per backend"},
    {"work-lookups", "100", "catcache lookups per backend"},
    {"syscalls", "off", "count syscalls per phase: on or off"},
    {"baseline", "", "ratios are taken against this layout/exit-check[/catcache] (default: array/always if run, else the first)"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
    {"svg", "", "also draw cost per connection vs shared_buffers to this SVG file"},
};

struct Config {
  lifecycle::CycleOptions options;
  std::string label;  // layout/exit-check/catcache
  std::vector<double> rates;               // conn/s per round
  lifecycle::CycleResult merged;           // all rounds, for the summary
  double baseline_forks_per_second = 0;
  std::string failure;  // the first run that did not end cleanly, if any
};

std::string SvgEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// Cost per connection (us) against shared_buffers, one line per label.
absl::Status WriteSvg(const std::string& path, const std::vector<Config>& configs,
                      const std::vector<buffers::SharedBuffers>& sizes) {
  std::map<std::string, std::vector<std::pair<size_t, double>>> lines;  // label -> (size index, us)
  double ymax = 0;
  for (const Config& c : configs) {
    size_t x = 0;
    while (sizes[x].bytes != c.options.backend.shared_buffers.bytes) ++x;
    const double rate = Summarize(c.rates).median;
    if (rate <= 0) continue;
    const double us = 1e6 / rate;
    lines[c.label].push_back({x, us});
    ymax = std::max(ymax, us);
  }
  const double w = 760, h = 420, left = 70, right = 230, top = 40, bottom = 50;
  const double pw = w - left - right, ph = h - top - bottom;
  ymax = ymax <= 0 ? 1 : ymax * 1.1;
  auto X = [&](size_t i) { return left + (sizes.size() == 1 ? pw / 2 : pw * static_cast<double>(i) / static_cast<double>(sizes.size() - 1)); };
  auto Y = [&](double v) { return top + ph - ph * v / ymax; };
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"15\">backendlab compare: cost per connection (us, median of rounds)</text>\n",
      w, h, left);
  absl::StrAppendFormat(&svg, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", left, top + ph, left + pw, top + ph);
  absl::StrAppendFormat(&svg, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", left, top, left, top + ph);
  for (int t = 0; t <= 4; ++t) {
    const double v = ymax * t / 4;
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.0f</text>\n", left - 6, Y(v) + 4, v);
    absl::StrAppendFormat(&svg, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n", left, Y(v), left + pw, Y(v));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", X(i), top + ph + 18,
                          buffers::FormatSize(sizes[i].bytes));
  }
  absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">shared_buffers</text>\n", left + pw / 2, h - 10);
  int k = 0;
  for (const auto& [label, points] : lines) {
    const char* color = kColors[k % std::size(kColors)];
    std::string pts;
    for (const auto& [x, us] : points) absl::StrAppendFormat(&pts, "%.1f,%.1f ", X(x), Y(us));
    absl::StrAppendFormat(&svg, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", color, pts);
    for (const auto& [x, us] : points) {
      absl::StrAppendFormat(&svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s at %s: %.0f us</title></circle>\n",
                            X(x), Y(us), color, SvgEscape(label), buffers::FormatSize(sizes[x].bytes), us);
    }
    absl::StrAppendFormat(&svg, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"3\" fill=\"%s\"/>\n", left + pw + 20, top + 10 + 18 * k, color);
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", left + pw + 40, top + 15 + 18 * k, SvgEscape(label));
    ++k;
  }
  svg += "</svg>\n";
  return WriteTextFile(path, svg);
}

}  // namespace

std::string CompareUsage() {
  return absl::StrCat(
      "usage: backendlab compare [flags]\n"
      "Runs connect/disconnect loops over every combination of the listed layouts,\n"
      "shared_buffers sizes, catcache strategies and exit-check policies, interleaved\n"
      "round robin, and prints conn/s and exit-phase costs with ratios to a baseline.\n\n",
      FlagsHelp(kFlags));
}

absl::Status RunCompareCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<int64_t> rounds = flags->GetInt("rounds", 1, 100);
  if (!rounds.ok()) return rounds.status();
  absl::StatusOr<int64_t> total = flags->GetInt("connections", 1, 10'000'000);
  if (!total.ok()) return total.status();
  if (*total < *rounds) return absl::InvalidArgumentError("--connections must be at least --rounds");
  // The shared flags (mode, clients, work, warm-up) through the cycle parser;
  // per-configuration values are set below.
  absl::StatusOr<lifecycle::CycleOptions> base = CycleOptionsFromFlags(*flags, /*with_configuration=*/false);
  if (!base.ok()) return base.status();
  base->connections = *total / *rounds;
  if (base->clients > base->connections) return absl::InvalidArgumentError("--clients is more than the connections of one round");
  base->baseline_forks = 30;

  std::vector<buffers::Layout> layouts;
  std::vector<buffers::SharedBuffers> sizes;
  std::vector<catcache::BucketStrategy> strategies;
  std::vector<buffers::ExitCheckPolicy> policies;
  for (const auto& [flag, parse] : std::vector<std::pair<const char*, std::function<absl::Status(const std::string&)>>>{
           {"layouts", [&](const std::string& v) { auto r = buffers::ParseLayout(v); if (r.ok()) layouts.push_back(*r); return r.status(); }},
           {"shared-buffers", [&](const std::string& v) { auto r = buffers::ParseSharedBuffers(v); if (r.ok()) sizes.push_back(*r); return r.status(); }},
           {"catcache", [&](const std::string& v) { auto r = catcache::ParseBucketStrategy(v); if (r.ok()) strategies.push_back(*r); return r.status(); }},
           {"exit-check", [&](const std::string& v) { auto r = buffers::ParseExitCheckPolicy(v); if (r.ok()) policies.push_back(*r); return r.status(); }},
       }) {
    absl::StatusOr<std::vector<std::string>> items = flags->GetList(flag);
    if (!items.ok()) return items.status();
    for (const std::string& item : *items) {
      if (absl::Status s = parse(item); !s.ok()) return s;
    }
  }
  std::vector<Config> configs;
  for (const auto& size : sizes) {
    for (auto layout : layouts) {
      for (auto policy : policies) {
        for (auto strategy : strategies) {
          Config c;
          c.options = *base;
          c.options.backend.layout = layout;
          c.options.backend.shared_buffers = size;
          c.options.backend.exit_check = policy;
          c.options.backend.catcache = strategy;
          c.label = absl::StrCat(std::string(buffers::LayoutName(layout)), "/", std::string(buffers::ExitCheckPolicyName(policy)),
                                 strategies.size() > 1 ? "/" + std::string(catcache::BucketStrategyName(strategy)) : "");
          configs.push_back(std::move(c));
        }
      }
    }
  }
  auto is_baseline = [](const Config& c, const std::string& label) {
    return c.label == label || c.label.rfind(label + "/", 0) == 0;
  };
  std::string baseline_label = flags->Has("baseline") ? flags->Get("baseline") : "array/always";
  if (std::none_of(configs.begin(), configs.end(), [&](const Config& c) { return is_baseline(c, baseline_label); })) {
    if (flags->Has("baseline")) {
      return absl::InvalidArgumentError(absl::StrCat("--baseline=", baseline_label,
                                                     " is none of the configurations (layout/exit-check[/catcache])"));
    }
    baseline_label = configs.front().label;  // the 9.0 configuration is not in this matrix
  }

  const bool progress = isatty(STDERR_FILENO);
  const size_t runs = configs.size() * static_cast<size_t>(*rounds);
  size_t done = 0;
  for (int64_t round = 0; round < *rounds; ++round) {
    for (size_t i = 0; i < configs.size(); ++i) {
      Config& c = configs[(i + static_cast<size_t>(round)) % configs.size()];
      if (progress) {
        std::fprintf(stderr, "\rcompare: round %lld/%lld, run %zu/%zu: %s %s\033[K", static_cast<long long>(round + 1),
                     static_cast<long long>(*rounds), done + 1, runs, c.label.c_str(),
                     buffers::FormatSize(c.options.backend.shared_buffers.bytes).c_str());
      }
      absl::StatusOr<lifecycle::CycleResult> r = lifecycle::RunCycle(c.options);
      if (!r.ok()) {
        if (progress) std::fprintf(stderr, "\r\033[K");
        return r.status();
      }
      const lifecycle::CycleSummary s = lifecycle::Summarize(*r);
      if (absl::Status outcome = RunOutcome(*r, s); !outcome.ok()) {
        if (absl::IsCancelled(outcome)) {
          if (progress) std::fprintf(stderr, "\r\033[K");
          return outcome;
        }
        // Crashed backends or failed connections: finish the matrix, then fail.
        if (c.failure.empty()) c.failure = std::string(outcome.message());
      }
      c.rates.push_back(s.connections_per_second);
      lifecycle::MergeRound(*r, c.merged);
      ++done;
    }
  }
  if (progress) std::fprintf(stderr, "\r\033[K");

  // Per-configuration figures; the baseline is looked up by label and size.
  struct Figures {
    double rate, per_conn_us, exit_us, exit_faults, teardown_us, reap_us, floor;
    int64_t crashed, leaks;
  };
  auto figures = [](const Config& c) {
    const lifecycle::CycleSummary s = lifecycle::Summarize(c.merged);
    const double rate = Summarize(c.rates).median;
    const auto& ph = s.phases;
    return Figures{rate,
                   rate > 0 ? 1e6 / rate : 0,
                   ph[static_cast<int>(lifecycle::Phase::kExitCheck)].wall_us.median,
                   ph[static_cast<int>(lifecycle::Phase::kExitCheck)].minor_faults,
                   ph[static_cast<int>(lifecycle::Phase::kTeardown)].wall_us.median,
                   ph[static_cast<int>(lifecycle::Phase::kReap)].wall_us.median,
                   s.baseline_forks_per_second,
                   s.crashed,
                   s.leaks};
  };
  auto baseline_for = [&](const Config& c) -> const Config* {
    for (const Config& b : configs) {
      if (b.options.backend.shared_buffers.bytes == c.options.backend.shared_buffers.bytes &&
          is_baseline(b, baseline_label)) {
        return &b;
      }
    }
    return nullptr;
  };
  Report report({{"config", "config"},
                 {"layout", ""},
                 {"exit_check", ""},
                 {"catcache", ""},
                 {"shared_buffers", "shared_buffers"},
                 {"shared_buffers_bytes", ""},
                 {"connections_per_second", "conn/s", 1},
                 {"us_per_connection", "us/conn", 0},
                 {"vs_fork_floor", "x floor", 2},
                 {"exit_check_us", "exit_check us", 1},
                 {"exit_check_minor_faults", "exit faults", 0},
                 {"teardown_us", "teardown us", 1},
                 {"reap_us", "reap us", 1},
                 {"conn_per_second_vs_baseline", "conn/s vs base", 2},
                 {"exit_check_us_vs_baseline", "exit vs base", 2},
                 {"backends_crashed", ""},
                 {"leaks_reported", ""}});
  for (const Config& c : configs) {
    const Figures f = figures(c);
    const Config* b = baseline_for(c);
    std::vector<Cell> row;
    row.emplace_back(std::in_place_type<std::string>, c.label);
    row.emplace_back(std::in_place_type<std::string>, buffers::LayoutName(c.options.backend.layout));
    row.emplace_back(std::in_place_type<std::string>, buffers::ExitCheckPolicyName(c.options.backend.exit_check));
    row.emplace_back(std::in_place_type<std::string>, catcache::BucketStrategyName(c.options.backend.catcache));
    row.emplace_back(std::in_place_type<std::string>, buffers::FormatSize(c.options.backend.shared_buffers.bytes));
    row.push_back(static_cast<int64_t>(c.options.backend.shared_buffers.bytes));
    row.push_back(f.rate);
    row.push_back(f.per_conn_us);
    row.push_back(f.floor > 0 ? Cell(f.rate / f.floor) : Cell(std::monostate{}));
    row.push_back(f.exit_us);
    row.push_back(f.exit_faults);
    row.push_back(f.teardown_us);
    row.push_back(f.reap_us);
    if (b != nullptr) {
      const Figures fb = figures(*b);
      row.push_back(fb.rate > 0 ? Cell(f.rate / fb.rate) : Cell(std::monostate{}));
      row.push_back(fb.exit_us > 0 ? Cell(f.exit_us / fb.exit_us) : Cell(std::monostate{}));
    } else {
      row.push_back(std::monostate{});
      row.push_back(std::monostate{});
    }
    row.push_back(f.crashed);
    row.push_back(f.leaks);
    report.AddRow(std::move(row));
  }

  nlohmann::json header = MachineHeader();
  header["command"] = "compare";
  header["rounds"] = *rounds;
  header["baseline"] = baseline_label;
  header["shared"] = ConfigJson(*base);
  report.SetHeader(header);
  out << absl::StrFormat("backendlab compare: %d configurations x %d interleaved rounds, %d connections each per round\n",
                         configs.size(), *rounds, base->connections);
  out << "every configuration: " << ConfigLine(*base, /*with_configuration=*/false) << "\n";
  out << MachineLine(header) << "\n\n";
  report.PrintText(out);
  out << "\nconn/s: median over rounds; us/conn = 1e6 / conn/s; x floor: conn/s over the bare\n"
         "fork+exit+wait rate measured in the same runs; exit_check, teardown, reap: median us per\n"
         "backend; ratios against " << baseline_label << " at the same shared_buffers.\n";
  if (!kAssertChecking) out << "exit-check assert: compiled out of this build (no assert checking), as in a PostgreSQL >= 9.1 release build.\n";

  if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
  if (flags->Has("svg")) {
    if (absl::Status s = WriteSvg(flags->Get("svg"), configs, sizes); !s.ok()) return s;
    out << "chart: " << flags->Get("svg") << "\n";
  }
  for (const Config& c : configs) {
    if (!c.failure.empty()) {
      return absl::AbortedError(absl::StrCat(c.label, " at ", buffers::FormatSize(c.options.backend.shared_buffers.bytes),
                                             ": ", c.failure));
    }
  }
  return absl::OkStatus();
}

}  // namespace backendlab::tools
