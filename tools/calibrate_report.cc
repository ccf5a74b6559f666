// `calibrate`'s side-by-side, its weighings as JSON, and its notes.
#include "tools/calibrate_report.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/names.h"
#include "base/server_usage.h"
#include "base/statistics.h"
#include "lifecycle/backend_weight.h"
#include "tools/server_columns.h"

namespace backendlab::tools {
namespace {

using calibrate::Agreement;
using calibrate::Group;
using calibrate::Weighing;

std::string GoalName(calibrate::Goal g) { return std::string(NameOf(g, calibrate::kGoalNames)); }

std::string ClientsHeading(const char* side, int clients) { return absl::StrCat(side, " (", clients, " clients)"); }

}  // namespace

Report SideBySide(const calibrate::CalibrationResult& r, int saturation_clients) {
  Report report({{"figure", "figure"},
                 {"real", "real", 1},
                 {"mock_unweighted", "mock unweighted", 1},
                 {"mock", "mock calibrated", 1},
                 {"vs_real", "vs real", 2, ColumnKind::kRatio},
                 {"goal", "goal"},
                 {"real_check", "real (check)", 1},
                 {"mock_check", "mock (check)", 1},
                 {"vs_real_check", "vs real", 2, ColumnKind::kRatio},
                 {"goal_check", "goal"},
                 {"real_saturated", r.saturated ? ClientsHeading("real", saturation_clients) : "", 1},
                 {"mock_saturated", r.saturated ? ClientsHeading("mock", saturation_clients) : "", 1},
                 {"vs_real_saturated", r.saturated ? "vs real" : "", 2, ColumnKind::kRatio}});
  using Ratio = std::optional<RatioEstimate> Agreement::*;
  // `ratio`: the agreement's paired ratio of the figure (none: the figure
  // comes from one profile, no rounds to pair); `goal`: the goals name it.
  // Each side's columns end in its suffix: the fit's none, "_check",
  // "_saturated".
  auto ratio_row = [&](const std::string& name, Ratio ratio, bool goal, auto field) {
    Report::Row row = report.NewRow();
    row.Set("figure", name);
    auto side = [&](const std::string& suffix, const Weighing& real, const Weighing& mock, const Agreement& a,
                    bool with_goal) {
      row.Set("real" + suffix, field(real)).Set("mock" + suffix, field(mock));
      const std::optional<RatioEstimate>& e = ratio != nullptr ? a.*ratio : std::optional<RatioEstimate>();
      row.Set("vs_real" + suffix, RatioCell(e));
      if (with_goal) row.Set("goal" + suffix, goal && e ? GoalName(calibrate::RatioGoalOf(*e)) : "");
    };
    row.Set("mock_unweighted", field(r.mock_unweighted));
    side("", r.real_fit, r.mock_fit, r.fit, true);
    if (r.checked) side("_check", r.real_check, r.mock_check, r.check, true);
    // Saturation has its totals alone: no groups (no profile of it).
    if (r.saturated && ratio != nullptr) side("_saturated", r.real_saturated, r.mock_saturated, r.saturation, false);
    report.AddRow(std::move(row));
  };
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
    Report::Row row = report.NewRow();
    row.Set("figure", absl::StrCat(std::string(NameOf(g, calibrate::kGroupNames)), " share %"))
        .Set("mock_unweighted", 100 * r.mock_unweighted.group_share[i]);
    auto side = [&](const std::string& suffix, const Weighing& real, const Weighing& mock) {
      row.Set("real" + suffix, 100 * real.group_share[i])
          .Set("mock" + suffix, 100 * mock.group_share[i])
          .Set("vs_real" + suffix, 100 * (mock.group_share[i] - real.group_share[i]))  // points, not a ratio
          .Set("goal" + suffix, GoalName(calibrate::ShareGoalOf(mock.group_share[i], real.group_share[i])));
    };
    side("", r.real_fit, r.mock_fit);
    if (r.checked) side("_check", r.real_check, r.mock_check);
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
  return {{"connections_per_second", w.connections_per_second},
          {"rounds_connections_per_second", w.rates},
          {"rounds_server_cpu_us", CpuUsByRound(w.rounds)},
          {kServerCpuKey, w.cpu_us},
          {"server_minor_faults", w.minor_faults},
          {"server_syscalls", w.syscalls < 0 ? nlohmann::json(nullptr) : nlohmann::json(w.syscalls)},
          {"syscalls_by_kind", w.syscalls_by_kind},
          {"groups", groups}};
}

void PrintCalibrateNotes(const calibrate::CalibrationResult& r, const std::string& profile_path, int saturation_clients,
                         std::ostream& out) {
  const lifecycle::BackendWeight& w = r.weight;
  int64_t startup_syscalls = 0;
  for (const auto& [kind, n] : w.startup.syscalls) startup_syscalls += n;
  out << absl::StrFormat(
      "\nThe profile (%s): start-up %d pages, %d bytes read, %d extra system calls, %.0f us of CPU; work %.0f us; "
      "exit %d pages, %.0f us; exit path %s; %d libraries; %d random bytes before each fork.\n",
      profile_path, w.startup.touch_pages, w.startup.read_file_bytes, startup_syscalls, w.startup.cpu_us, w.work.cpu_us,
      w.exit.touch_pages, w.exit.cpu_us, std::string(NameOf(w.exit_path, lifecycle::kExitPathNames)),
      static_cast<int>(w.libraries.size()), w.random_bytes_per_fork);
  out << "Real: the server's CPU, faults and system calls per connection (the postmaster with every backend it\n"
         "  reaped, warm-up included; CPU in the kernel's accounting on both sides), its groups from perf samples\n"
         "  of the same server; mock: the same for the mock postmaster (wait4), its groups from the phase counters.\n"
         "  vs real: the calibrated mock over the real server, " << kRatioLegend << ";\n"
         "  for shares the difference in points. The groups' us/conn come from one profile each: no rounds to\n"
         "  pair, compared by their shares. Goals: CPU and faults within 10 %, judged on the interval (met: all of\n"
         "  it within, missed: none of it, unsure: it straddles an edge), each group's share within 5 points.\n"
         "  conn/s is checked, not fitted: at one client it depends on what overlaps (a backend's exit runs on\n"
         "  the other core while the client connects again)";
  if (r.saturated) {
    out << absl::StrFormat(";\n  at saturation (%d clients in flight, the fit's size, the same rounds) it is what the machine\n"
                           "  can serve, and the CPU per connection beside it checks the fit under load",
                           saturation_clients);
  }
  out << ".\n  syscalls/conn: less clock_gettime and getrusage on both sides (the mock's phase clocks).\n";
  for (const std::string& note : r.notes) out << "note: " << note << "\n";
}

}  // namespace backendlab::tools
