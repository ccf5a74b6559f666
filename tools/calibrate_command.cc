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
#include "base/cpus.h"
#include "base/processes.h"
#include "lifecycle/backend_weight.h"
#include "pgreal/connect_loop.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/calibrate_report.h"
#include "tools/host_changes.h"
#include "tools/html_report.h"
#include "tools/report.h"
#include "tools/progress.h"

namespace backendlab::tools {
namespace {


constexpr FlagSpec kCalibrateFlags[] = {
    {"bindir", "", "the real server's bin directory (default: Debian's PostgreSQL 15)"},
    {"shared-buffers", "128MB", "shared_buffers the profile is fitted at"},
    {"check", "8GB", "shared_buffers the fit is checked at, not fitted (off: no check)"},
    {"connections", "300", "connections per measured run, real and mock alike"},
    {"warmup", "20", "connections made first in each run"},
    {"rounds", "10", "interleaved rounds of the side-by-side (3 leave every CPU and conn/s interval too wide to judge a goal)"},
    {"saturation", "auto", "clients in flight of the saturation check, beside one client's (auto: 2 x the CPUs allowed; off: none)"},
    {"fit-rounds", "3", "measurements of the real server at one client that the fit aims at (their figures together)"},
    {"iterations", "3", "steps of the fit"},
    {"backend-profile", "backendlab-backend-profile.json", "where the fitted profile is written (cycle/compare --backend-profile reads it)"},
    {"json", "", "also write the side-by-side as JSON to this file"},
    {"csv", "", "also write the side-by-side as CSV to this file"},
    {"html", "", "also write one self-contained HTML page: the side-by-side with its intervals, a chart"},
};

absl::StatusOr<int64_t> Size(const std::string& flag, const std::string& text) {
  absl::StatusOr<buffers::SharedBuffers> s = buffers::ParseSharedBuffers(text);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", s.status().message()));
  return static_cast<int64_t>(s->bytes);
}

absl::StatusOr<calibrate::CalibrationOptions> ParseCalibrateOptions(const Flags& flags) {
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
                          {"fit-rounds", 1, 100, &o.fit_rounds},
                          {"iterations", 1, 20, &iterations}};
  for (const IntFlag& f : ints) {
    absl::StatusOr<int64_t> v = flags.GetInt(f.name, f.min, f.max);
    if (!v.ok()) return v.status();
    *f.target = *v;
  }
  o.iterations = static_cast<int>(iterations);
  if (flags.Get("saturation") == "auto") {
    o.saturation_clients = SaturationClients();
  } else if (flags.Get("saturation") != "off") {
    absl::StatusOr<int64_t> clients = flags.GetInt("saturation", 2, kMaxClients);
    if (!clients.ok()) return clients.status();
    o.saturation_clients = static_cast<int>(*clients);
  }
  if (o.saturation_clients > o.connections) {
    return absl::InvalidArgumentError(absl::StrCat("--saturation=", o.saturation_clients, " is more than --connections=", o.connections));
  }
  return o;
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
      FlagsHelp(kCalibrateFlags));
}

absl::Status RunCalibrateCommand(std::span<const std::string> args, std::ostream& terminal) {
  Transcript out(terminal);  // what is printed, kept for --html
  absl::StatusOr<Flags> flags = Flags::Parse(args, kCalibrateFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<calibrate::CalibrationOptions> options = ParseCalibrateOptions(*flags);
  if (!options.ok()) return options.status();
  constexpr std::string_view kWritten[] = {"backend-profile"};  // a file written, beside the usual outputs
  if (absl::Status s = CheckOutputPaths(*flags, "", {}, kWritten); !s.ok()) return s;
  ProgressLine progress;
  options->progress = progress.Callback();
  RestoreHostChanges(out);
  absl::StatusOr<calibrate::CalibrationResult> result = calibrate::RunCalibration(*options);
  progress.Clear();
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
  header["fit_rounds"] = options->fit_rounds;
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
  header["saturation_clients"] = result->saturated ? nlohmann::json(options->saturation_clients) : nlohmann::json(nullptr);
  if (result->saturated) {
    header["real_saturated"] = WeighingJson(result->real_saturated);
    header["mock_saturated"] = WeighingJson(result->mock_saturated);
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
      << (result->saturated ? absl::StrCat(", at 1 and ", options->saturation_clients, " clients") : std::string()) << "; "
      << options->rounds << " interleaved rounds of " << options->connections << " connections\n";
  out << MachineLine(header) << "\n\n";
  Report report = SideBySide(*result, options->saturation_clients);
  report.PrintText(out);
  PrintCalibrateNotes(*result, flags->Get("backend-profile"), options->saturation_clients, out);
  report.SetHeader(header);
  if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
  if (flags->Has("html")) {
    out << "page: " << flags->Get("html") << "\n";
    HtmlPage page = PageOf("backendlab calibrate", header, report, out.text());
    page.chart_key = "vs_real";
    page.chart_title = "the calibrated mock over the real server, paired within rounds, 95 % interval";
    if (absl::Status s = WriteHtml(flags->Get("html"), page); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace backendlab::tools
