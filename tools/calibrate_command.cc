// `backendlab calibrate`: flags -> calibrate::RunCalibration -> the profile
// file, and the real server and the mock side by side, at the size fitted
// and at the size checked, with the goals' verdicts.
#include "tools/calibrate_command.h"

#include <cmath>
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "buffers/shared_buffers.h"
#include "calibrate/calibration.h"
#include "base/server_usage.h"
#include "base/statistics.h"
#include "lifecycle/backend_weight.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

using calibrate::Group;
using calibrate::Weighing;

constexpr FlagSpec kFlags[] = {
    {"bindir", "", "the real server's bin directory (default: Debian's PostgreSQL 15)"},
    {"shared-buffers", "128MB", "shared_buffers the profile is fitted at"},
    {"check", "8GB", "shared_buffers the fit is checked at, not fitted (off: no check)"},
    {"connections", "300", "connections per measured run, real and mock alike"},
    {"warmup", "20", "connections made first in each run"},
    {"rounds", "3", "interleaved rounds of the side-by-side"},
    {"iterations", "3", "steps of the fit"},
    {"backend-profile", "backendlab-backend-profile.json", "where the fitted profile is written (cycle/compare --backend-profile reads it)"},
    {"json", "", "also write the side-by-side as JSON to this file"},
    {"csv", "", "also write the side-by-side as CSV to this file"},
};

absl::StatusOr<int64_t> Size(const std::string& flag, const std::string& text) {
  absl::StatusOr<buffers::SharedBuffers> s = buffers::ParseSharedBuffers(text);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", s.status().message()));
  return static_cast<int64_t>(s->bytes);
}

absl::StatusOr<calibrate::CalibrationOptions> ParseOptions(const Flags& flags) {
  calibrate::CalibrationOptions o;
  absl::StatusOr<pgreal::Installation> installation =
      flags.Has("bindir") ? pgreal::InstallationAt(flags.Get("bindir")) : pgreal::DefaultInstallation();
  if (!installation.ok()) return installation.status();
  o.installation = *installation;
  absl::StatusOr<int64_t> fit = Size("shared-buffers", flags.Get("shared-buffers"));
  if (!fit.ok()) return fit.status();
  o.fit_shared_buffers = *fit;
  if (flags.Get("check") == "off") {
    o.check_shared_buffers = 0;
  } else {
    absl::StatusOr<int64_t> check = Size("check", flags.Get("check"));
    if (!check.ok()) return check.status();
    if (*check == *fit) return absl::InvalidArgumentError("--check: the size checked must differ from the size fitted");
    o.check_shared_buffers = *check;
  }
  struct IntFlag {
    const char* name;
    int64_t min, max;
    int64_t* target;
  };
  int64_t iterations = o.iterations;
  const IntFlag ints[] = {{"connections", 10, 1'000'000, &o.connections},
                          {"warmup", 0, 10'000, &o.warmup},
                          {"rounds", 1, 100, &o.rounds},
                          {"iterations", 1, 20, &iterations}};
  for (const IntFlag& f : ints) {
    absl::StatusOr<int64_t> v = flags.GetInt(f.name, f.min, f.max);
    if (!v.ok()) return v.status();
    *f.target = *v;
  }
  o.iterations = static_cast<int>(iterations);
  return o;
}

std::string GoalName(calibrate::Goal g) { return std::string(NameOf(g, calibrate::kGoalNames)); }

// One row per figure: real, the mock unweighted and weighed at the fit's
// size, the weighed mock over real paired within the rounds (for shares,
// the difference in points) and the goal's verdict; the same at the check's
// size.
Report SideBySide(const calibrate::CalibrationResult& r) {
  Report report({{"figure", "figure"},
                 {"real", "real", 1},
                 {"mock_unweighted", "mock unweighted", 1},
                 {"mock", "mock calibrated", 1},
                 {"vs_real", "vs real", 2, ColumnKind::kRatio},
                 {"goal", "goal"},
                 {"real_check", "real (check)", 1},
                 {"mock_check", "mock (check)", 1},
                 {"vs_real_check", "vs real", 2, ColumnKind::kRatio},
                 {"goal_check", "goal"}});
  using Ratio = std::optional<RatioEstimate> calibrate::Agreement::*;
  // `ratio`: the agreement's paired ratio of the figure (none: the figure
  // comes from one profile, no rounds to pair); `goal`: the goals name it.
  auto ratio_row = [&](const std::string& name, Ratio ratio, bool goal, auto field) {
    std::vector<Cell> row;
    row.emplace_back(std::in_place_type<std::string>, name);
    auto side = [&](const Weighing& real, const Weighing& mock, const calibrate::Agreement& a, bool with_unweighted) {
      row.push_back(field(real));
      if (with_unweighted) row.push_back(field(r.mock_unweighted));
      row.push_back(field(mock));
      const std::optional<RatioEstimate>& e = ratio != nullptr ? a.*ratio : std::optional<RatioEstimate>();
      row.push_back(RatioCell(e));
      row.emplace_back(std::in_place_type<std::string>, goal && e ? GoalName(calibrate::RatioGoalOf(*e)) : "");
    };
    side(r.real_fit, r.mock_fit, r.fit, true);
    if (r.checked) {
      side(r.real_check, r.mock_check, r.check, false);
    } else {
      for (int i = 0; i < 4; ++i) row.push_back(std::monostate{});
    }
    report.AddRow(std::move(row));
  };
  using calibrate::Agreement;
  ratio_row("conn/s", &Agreement::rate, false, [](const Weighing& w) { return w.connections_per_second; });
  ratio_row("server CPU us/conn", &Agreement::cpu_us, true, [](const Weighing& w) { return w.cpu_us; });
  ratio_row("faults/conn", &Agreement::minor_faults, true, [](const Weighing& w) { return w.minor_faults; });
  ratio_row("syscalls/conn", &Agreement::syscalls, false, [](const Weighing& w) { return w.syscalls; });
  for (Group g : calibrate::kAllGroups) {
    const size_t i = static_cast<size_t>(g);
    ratio_row(absl::StrCat(std::string(NameOf(g, calibrate::kGroupNames)), " us/conn"), nullptr, false,
              [i](const Weighing& w) { return w.group_cpu_us[i]; });
  }
  for (Group g : calibrate::kAllGroups) {
    const size_t i = static_cast<size_t>(g);
    std::vector<Cell> row;
    row.emplace_back(std::in_place_type<std::string>, absl::StrCat(std::string(NameOf(g, calibrate::kGroupNames)), " share %"));
    auto side = [&](const Weighing& real, const Weighing& mock, bool with_unweighted) {
      row.push_back(100 * real.group_share[i]);
      if (with_unweighted) row.push_back(100 * r.mock_unweighted.group_share[i]);
      row.push_back(100 * mock.group_share[i]);
      row.push_back(100 * (mock.group_share[i] - real.group_share[i]));  // points, not a ratio
      row.emplace_back(std::in_place_type<std::string>, GoalName(calibrate::ShareGoalOf(mock.group_share[i], real.group_share[i])));
    };
    side(r.real_fit, r.mock_fit, true);
    if (r.checked) {
      side(r.real_check, r.mock_check, false);
    } else {
      for (int k = 0; k < 4; ++k) row.push_back(std::monostate{});
    }
    report.AddRow(std::move(row));
  }
  return report;
}

nlohmann::json WeighingJson(const Weighing& w) {
  nlohmann::json groups = nlohmann::json::object();
  for (Group g : calibrate::kAllGroups) {
    const size_t i = static_cast<size_t>(g);
    groups[std::string(NameOf(g, calibrate::kGroupNames))] = {{"cpu_us", w.group_cpu_us[i]}, {"share", w.group_share[i]}};
  }
  std::vector<double> cpu;
  for (const ServerUsage& u : w.rounds) cpu.push_back(PerConnectionOf(u).cpu_us);
  return {{"connections_per_second", w.connections_per_second},
          {"rounds_connections_per_second", w.rates},
          {"rounds_cpu_us", cpu},
          {"cpu_us", w.cpu_us},
          {"minor_faults", w.minor_faults},
          {"syscalls", w.syscalls < 0 ? nlohmann::json(nullptr) : nlohmann::json(w.syscalls)},
          {"syscalls_by_kind", w.syscalls_by_kind},
          {"groups", groups}};
}

}  // namespace

std::string CalibrateUsage() {
  return absl::StrCat(
      "usage: backendlab calibrate [flags]\n"
      "Fits a backend weight profile so that the mock's backend weighs what a real\n"
      "PostgreSQL backend weighs on this machine (its CPU per connection by phase group,\n"
      "its page faults, its system calls by kind), writes it (--backend-profile), and measures the\n"
      "real server and the mock side by side at the size fitted and at one not fitted.\n"
      "Needs perf (the real server's phases). Takes a few minutes.\n\n",
      FlagsHelp(kFlags));
}

absl::Status RunCalibrateCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<calibrate::CalibrationOptions> options = ParseOptions(*flags);
  if (!options.ok()) return options.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  if (absl::Status s = CheckOutputFile("backend-profile", flags->Get("backend-profile")); !s.ok()) return s;
  if (isatty(STDERR_FILENO)) {
    options->progress = [](const std::string& line) { std::fprintf(stderr, "\r%s\033[K", line.c_str()); };
  }
  absl::StatusOr<calibrate::CalibrationResult> result = calibrate::RunCalibration(*options);
  if (options->progress) std::fprintf(stderr, "\r\033[K");
  if (!result.ok()) return result.status();

  nlohmann::json header = MachineHeader();
  header["command"] = "calibrate";
  header["server"] = result->server_label;
  header["server_version"] = result->server_version;
  header["server_build"] = result->server_build;
  header["shared_buffers_bytes"] = options->fit_shared_buffers;
  header["check_shared_buffers_bytes"] = options->check_shared_buffers;
  header["connections"] = options->connections;
  header["rounds"] = options->rounds;
  header["iterations"] = options->iterations;
  header["backend_profile"] = flags->Get("backend-profile");
  header["weight"] = lifecycle::BackendWeightToJson(result->weight);
  header["real"] = WeighingJson(result->real_fit);
  header["mock"] = WeighingJson(result->mock_fit);
  header["mock_unweighted"] = WeighingJson(result->mock_unweighted);
  if (result->checked) {
    header["real_check"] = WeighingJson(result->real_check);
    header["mock_check"] = WeighingJson(result->mock_check);
  }
  header["notes"] = result->notes;

  if (absl::Status s = WriteTextFile(flags->Get("backend-profile"), lifecycle::BackendWeightToJson(result->weight).dump(2) + "\n");
      !s.ok()) {
    return s;
  }
  out << "backendlab calibrate: the mock weighed against PostgreSQL " << result->server_version << " ("
      << result->server_build << "), fitted at " << buffers::FormatSize(static_cast<uint64_t>(options->fit_shared_buffers))
      << (result->checked ? absl::StrCat(", checked at ", buffers::FormatSize(static_cast<uint64_t>(options->check_shared_buffers)))
                          : std::string())
      << "; " << options->rounds << " interleaved rounds of " << options->connections << " connections\n";
  out << MachineLine(header) << "\n\n";
  Report report = SideBySide(*result);
  report.PrintText(out);
  const lifecycle::BackendWeight& w = result->weight;
  out << absl::StrFormat(
      "\nThe profile (%s): start-up %d pages, %d bytes read, %d extra system calls, %.0f us of CPU; work %.0f us; "
      "exit %d pages, %.0f us; exit path %s; %d libraries; %d random bytes before each fork.\n",
      flags->Get("backend-profile"), w.startup.touch_pages, w.startup.read_file_bytes,
      [&] {
        int64_t n = 0;
        for (const auto& [k, c] : w.startup.syscalls) n += c;
        return n;
      }(),
      w.startup.cpu_us, w.work.cpu_us, w.exit.touch_pages, w.exit.cpu_us, std::string(NameOf(w.exit_path, lifecycle::kExitPathNames)),
      static_cast<int>(w.libraries.size()), w.random_bytes_per_fork);
  out << "Real: the server's CPU, faults and system calls per connection (the postmaster with every backend it\n"
         "  reaped, warm-up included; CPU in the kernel's accounting on both sides), its groups from perf samples\n"
         "  of the same server; mock: the same for the mock postmaster (wait4), its groups from the phase counters.\n"
         "  vs real: the calibrated mock over the real server, " << kRatioLegend << ";\n"
         "  for shares the difference in points. The groups' us/conn come from one profile each: no rounds to\n"
         "  pair, compared by their shares. Goals: CPU and faults within 10 %, judged on the interval (met: all of\n"
         "  it within, missed: none of it, unsure: it straddles an edge), each group's share within 5 points.\n"
         "  conn/s is checked, not fitted: at one client it depends on what overlaps (a backend's exit runs on\n"
         "  the other core while the client connects again). syscalls/conn: less clock_gettime and getrusage on\n"
         "  both sides (the mock's phase clocks).\n";
  for (const std::string& note : result->notes) out << "note: " << note << "\n";
  report.SetHeader(header);
  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
