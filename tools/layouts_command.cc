// `backendlab layouts`: flags -> buffers::RunLayoutExperiment -> the table,
// its same-run ratios, and the JSON/CSV files.
#include "tools/layouts_command.h"

#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/check.h"
#include "buffers/layout_experiment.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

using buffers::LayoutRow;
using buffers::ScanKernel;

constexpr FlagSpec kLayoutsFlags[] = {
    {"shared-buffers", "128MB,1GB,8GB,32GB", "shared_buffers sizes (NBuffers = size / 8kB)"},
    {"layouts", "array,bytes,hash", "refcount table layouts to compare"},
    {"kernel", "simd", "scan kernel of the exit check: naive, word or simd"},
    {"rounds", "15", "interleaved rounds; medians are reported"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};

absl::StatusOr<buffers::LayoutExperimentOptions> ParseLayoutsOptions(const Flags& flags) {
  buffers::LayoutExperimentOptions options;
  absl::StatusOr<std::vector<std::string>> sizes = flags.GetList("shared-buffers");
  if (!sizes.ok()) return sizes.status();
  for (const std::string& name : *sizes) {
    absl::StatusOr<buffers::SharedBuffers> size = buffers::ParseSharedBuffers(name);
    if (!size.ok()) return size.status();
    options.sizes.push_back(*size);
  }
  absl::StatusOr<std::vector<std::string>> layouts = flags.GetList("layouts");
  if (!layouts.ok()) return layouts.status();
  for (const std::string& name : *layouts) {
    absl::StatusOr<buffers::Layout> layout = buffers::ParseLayout(name);
    if (!layout.ok()) return layout.status();
    options.layouts.push_back(*layout);
  }
  absl::StatusOr<ScanKernel> kernel = buffers::ParseScanKernel(flags.Get("kernel"));
  if (!kernel.ok()) return kernel.status();
  options.kernel = *kernel;
  absl::StatusOr<int64_t> rounds = flags.GetInt("rounds", 1, 1000);
  if (!rounds.ok()) return rounds.status();
  options.rounds = *rounds;
  return options;
}


Report RowsTable(const std::vector<LayoutRow>& rows) {
  Report report({
      {"layout", "layout"},
      {"shared_buffers", "shared_buffers"},
      {"shared_buffers_bytes", ""},
      {"nbuffers", "NBuffers"},
      {"bytes_per_backend", "bytes/backend"},
      {"pin_unpin_ns_held_1", "pin ns:1", 2},
      {"pin_unpin_ns_held_8", "8", 2},
      {"pin_unpin_ns_held_64", "64 held", 2},
      {"pin_unpin_ns_random", "random", 2},
      {"exit_check_us", "exit check us", 2},
      {"exit_check_us_p10", ""},
      {"exit_check_us_p90", ""},
      {"exit_minor_faults", "exit faults", 0},
      {"lifetime_us", "lifetime us", 1},
      {"lifetime_minor_faults", "lifetime faults", 0},
      {"scan_gbps", "scan GB/s", 1},
      {"read_baseline_gbps", "read GB/s", 1},
      {"scan_vs_read", "scan/read", 2},
  });
  for (const LayoutRow& r : rows) {
    Report::Row row = report.NewRow();
    row.Set("layout", std::string(buffers::LayoutName(r.layout)))
        .Set("shared_buffers", buffers::FormatSize(r.size.bytes))
        .Set("shared_buffers_bytes", static_cast<int64_t>(r.size.bytes))
        .Set("nbuffers", static_cast<int64_t>(r.size.nbuffers))
        .Set("bytes_per_backend", static_cast<int64_t>(r.bytes_per_backend));
    for (size_t h = 0; h < std::size(buffers::kHeldCounts); ++h) {
      row.Set(absl::StrCat("pin_unpin_ns_held_", buffers::kHeldCounts[h]), r.pin_unpin_ns[h]);
    }
    row.Set("pin_unpin_ns_random", r.pin_unpin_ns_random)
        .Set("exit_check_us", r.exit_check_us.median)
        .Set("exit_check_us_p10", r.exit_check_us.p10)
        .Set("exit_check_us_p90", r.exit_check_us.p90)
        .Set("exit_minor_faults", r.exit_minor_faults)
        .Set("lifetime_us", r.lifetime_us)
        .Set("lifetime_minor_faults", r.lifetime_minor_faults)
        .Set("scan_gbps", OptionalCell(r.scan_gbps))
        .Set("read_baseline_gbps", OptionalCell(r.read_baseline_gbps))
        .Set("scan_vs_read", r.scan_gbps ? Cell(*r.scan_gbps / *r.read_baseline_gbps) : Cell(std::monostate{}));
    report.AddRow(std::move(row));
  }
  return report;
}

// {"exit_check_array_over_hash": {"8GB": 61234.5, "8GB_ci": [low, high],
// "8GB_verdict": "slower", ...}, ...}, and one text line per ratio with the
// sizes in the order the user gave them.
nlohmann::json PrintRatios(const std::vector<buffers::LayoutRatio>& ratios, std::ostream& out) {
  nlohmann::json json = nlohmann::json::object();
  if (!ratios.empty()) {
    out << "\nPaired ratios: A over B within each round, geometric mean over the rounds [95 % interval],\n"
           "verdict for A (faster or slower where the interval excludes 1, ~ where it covers 1):\n";
  }
  // Three significant digits or so, the same digits after the point at one magnitude.
  auto number = [](double v) {
    return v >= 100 ? absl::StrFormat("%.0f", v) : v >= 10 ? absl::StrFormat("%.1f", v) : absl::StrFormat("%.2f", v);
  };
  for (const buffers::LayoutRatio& ratio : ratios) {
    out << absl::StrFormat("  %-36s", ratio.name);
    for (const auto& [size, r] : ratio.by_size) {
      const std::string name = buffers::FormatSize(size.bytes);
      json[ratio.name][name] = r.ratio;
      json[ratio.name][name + "_ci"] =
          r.has_interval ? nlohmann::json::array({r.interval.low, r.interval.high}) : nlohmann::json(nullptr);
      json[ratio.name][name + "_verdict"] = std::string(VerdictName(r.verdict));
      out << "  " << name << " " << number(r.ratio) << "x";
      if (r.has_interval) out << " [" << number(r.interval.low) << ", " << number(r.interval.high) << "]";
      out << " " << VerdictName(r.verdict);
    }
    out << "\n";
  }
  return json;
}

}  // namespace

std::string LayoutsUsage() {
  return absl::StrCat(
      "usage: backendlab layouts [flags]\n"
      "Compares the backend-private buffer refcount layouts (array, bytes, hash, hash-keys, array-touched):\n"
      "bytes per backend, pin+unpin cost, exit-check cost on a fresh table with its\n"
      "page faults, and warm-scan speed against a streaming-read baseline.\n\n",
      FlagsHelp(kLayoutsFlags));
}

absl::Status RunLayoutsCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kLayoutsFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<buffers::LayoutExperimentOptions> options = ParseLayoutsOptions(*flags);
  if (!options.ok()) return options.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  absl::StatusOr<buffers::LayoutExperimentResult> result = buffers::RunLayoutExperiment(*options);
  if (!result.ok()) return result.status();

  Report report = RowsTable(result->rows);
  nlohmann::json header = MachineHeader();
  header["command"] = "layouts";
  header["rounds"] = options->rounds;
  header["exit_check_policy"] = "always";
  header["scan_kernel"] = buffers::ScanKernelName(options->kernel);
  header["simd"] = buffers::SimdImplementationName();
  header["fresh_pins"] = buffers::kFreshPins;

  out << absl::StrFormat("backendlab layouts: PrivateRefCount layouts, %d interleaved rounds, medians; paired ratios\n",
                         options->rounds);
  out << MachineLine(header) << "; exit check: policy always, kernel " << buffers::ScanKernelName(options->kernel)
      << (options->kernel == ScanKernel::kSimd ? " (" + std::string(buffers::SimdImplementationName()) + ")" : "")
      << "\n\n";
  report.PrintText(out);
  out << "\npin ns: one pin+unpin pair with 1, 8 or 64 distinct buffers held at the peak;\n"
         "  random: one at a time, 65536 random buffers over all of NBuffers, pages already touched.\n"
         "exit check: a fresh table (fresh pages, "
      << buffers::kFreshPins
      << " pins) scanned at exit; its faults are the zero pages the scan maps.\n"
         "lifetime: allocate + pins + exit check + free, as one backend would.\n"
         "scan/read: warm best-kernel scan against a streaming read of the same bytes.\n";
  header["ratios"] = PrintRatios(result->ratios, out);
  report.SetHeader(header);
  if (!kAssertChecking) {
    out << "Policies `assert` (this build has no assert checking) and `off` run no exit check: 0 us.\n";
  }
  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
