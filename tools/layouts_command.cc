// `backendlab layouts`: each layout x shared_buffers measured in interleaved
// repetitions (so drift on a shared machine hits every configuration alike),
// reported as medians with p10/p90 in the machine-readable outputs.
#include "tools/layouts_command.h"

#include <array>
#include <iostream>
#include <map>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/compiler.h"
#include "buffers/exit_check.h"
#include "buffers/layout_dispatch.h"
#include "buffers/shared_buffers.h"
#include "base/resource_usage.h"
#include "base/summary.h"
#include "tools/flags.h"
#include "tools/interleaved.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

using buffers::BufferId;
using buffers::Layout;
using buffers::RefCountTable;
using buffers::ScanKernel;

constexpr FlagSpec kFlags[] = {
    {"shared-buffers", "128MB,1GB,8GB,32GB", "shared_buffers sizes (NBuffers = size / 8kB)"},
    {"layouts", "array,bytes,hash", "refcount table layouts to compare"},
    {"kernel", "simd", "scan kernel of the exit check: naive, word or simd"},
    {"repetitions", "15", "interleaved repetitions; medians are reported"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};

constexpr int kHeld[] = {1, 8, 64};
// Pairs per pin+unpin timing: a multiple of every held count, ~0.5 ms of work.
constexpr int kPairsPerTiming = 192'000;
// Distinct buffers of the `random` timing: 64 Ki cache lines of `array` at
// the larger sizes, more than this machine's L2 holds.
constexpr size_t kRandomBuffers = 65536;
// Touched by the "few pins" of a fresh backend before it exits.
constexpr int kFreshPins = 4;
// A warm scan is repeated until it has read this many bytes, so small tables
// are timed over more than a timer tick.
constexpr size_t kScanBytesPerTiming = size_t{64} << 20;

struct Config {
  Layout layout;
  buffers::SharedBuffers size;
};

// One repetition's numbers for one configuration.
struct Sample {
  std::array<double, std::size(kHeld)> pin_unpin_ns{};
  double pin_unpin_ns_random = 0;  // one at a time, spread over all of NBuffers
  double exit_check_us = 0;
  double exit_minor_faults = 0;
  double lifetime_us = 0;
  double lifetime_minor_faults = 0;
  double scan_gbps = -1;  // < 0: this layout has no scan
  double read_baseline_gbps = -1;
  size_t bytes_per_backend = 0;
};

std::vector<BufferId> SpreadBuffers(int count, uint32_t nbuffers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<BufferId> pick(0, nbuffers - 1);
  std::vector<BufferId> out;
  while (out.size() < static_cast<size_t>(count) && out.size() < nbuffers) {
    BufferId b = pick(rng);
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  }
  return out;
}

// Warm tables for the scan timing, one per size, allocated once and touched.
struct WarmTables {
  std::vector<int32_t> ints;
  std::vector<uint8_t> bytes;
};

double GbPerSecond(size_t bytes, int64_t ns) { return ns > 0 ? static_cast<double>(bytes) / static_cast<double>(ns) : 0; }

template <typename Element>
void TimeWarmScan(const std::vector<Element>& table, ScanKernel kernel, bool baseline_first, Sample& s) {
  const size_t bytes = table.size() * sizeof(Element);
  const size_t passes = std::max<size_t>(1, kScanBytesPerTiming / bytes);
  auto time_scan = [&] {
    int64_t t0 = NowNs();
    size_t sink = 0;
    for (size_t p = 0; p < passes; ++p) {
      sink += buffers::FindNonZero(kernel, table.data(), table.size());
      CompilerBarrier();
    }
    int64_t t1 = NowNs();
    BACKENDLAB_CHECK(sink == passes * table.size());  // the warm table is all zero
    s.scan_gbps = GbPerSecond(bytes * passes, t1 - t0);
  };
  auto time_baseline = [&] {
    int64_t t0 = NowNs();
    uint64_t sink = 0;
    for (size_t p = 0; p < passes; ++p) {
      sink |= buffers::StreamingRead(table.data(), bytes);
      CompilerBarrier();
    }
    int64_t t1 = NowNs();
    BACKENDLAB_CHECK(sink == 0);
    s.read_baseline_gbps = GbPerSecond(bytes * passes, t1 - t0);
  };
  if (baseline_first) {
    time_baseline();
    time_scan();
  } else {
    time_scan();
    time_baseline();
  }
}

template <RefCountTable T>
absl::Status MeasureOnce(uint32_t nbuffers, ScanKernel kernel, const WarmTables& warm, int repetition,
                         Sample& s) {
  // pin+unpin with 1, 8 and 64 distinct buffers held at the peak.
  {
    absl::StatusOr<T> table = T::Create(nbuffers);
    if (!table.ok()) return table.status();
    for (size_t h = 0; h < std::size(kHeld); ++h) {
      const std::vector<BufferId> buffers = SpreadBuffers(kHeld[h], nbuffers, 1000 + h);
      const int rounds = kPairsPerTiming / kHeld[h];
      bool ok = true;
      const int64_t t0 = NowNs();
      for (int r = 0; r < rounds; ++r) {
        for (BufferId b : buffers) ok &= table->Pin(b).ok();
        CompilerBarrier();
        for (BufferId b : buffers) ok &= table->Unpin(b).ok();
        CompilerBarrier();
      }
      const int64_t t1 = NowNs();
      if (!ok) return absl::InternalError("pin/unpin failed during timing");
      s.pin_unpin_ns[h] = static_cast<double>(t1 - t0) / static_cast<double>(rounds * buffers.size());
    }
    // Random buffers over the whole table: the `array` and `bytes` layouts now
    // pay cache misses that grow with NBuffers; `hash` stays in one line.
    std::mt19937_64 rng(99);
    std::uniform_int_distribution<BufferId> pick(0, nbuffers - 1);
    std::vector<BufferId> spread(kRandomBuffers);
    for (BufferId& b : spread) b = pick(rng);
    // Touch the pages first: this times cache and TLB misses, not the first
    // write fault of each page (the exit-check figures show those).
    bool ok = true;
    for (BufferId b : spread) ok &= table->Pin(b).ok() && table->Unpin(b).ok();
    const int64_t t0 = NowNs();
    for (int i = 0; i < kPairsPerTiming; ++i) {
      const BufferId b = spread[static_cast<size_t>(i) % kRandomBuffers];
      ok &= table->Pin(b).ok();
      CompilerBarrier();
      ok &= table->Unpin(b).ok();
    }
    const int64_t t1 = NowNs();
    if (!ok) return absl::InternalError("pin/unpin failed during timing");
    s.pin_unpin_ns_random = static_cast<double>(t1 - t0) / kPairsPerTiming;
  }
  // A fresh backend's table: allocate, a few pins, exit check (policy always), free.
  {
    const std::vector<BufferId> touched = SpreadBuffers(kFreshPins, nbuffers, 7);
    const ResourceSample start = SampleSelf();
    ResourceSample before_check, after_check;
    int64_t check_ns;
    {
      absl::StatusOr<T> table = T::Create(nbuffers);
      if (!table.ok()) return table.status();
      for (BufferId b : touched) (void)table->Pin(b);
      for (BufferId b : touched) (void)table->Unpin(b);
      before_check = SampleSelf();
      // Only the clock inside the interval: a getrusage would cost more than
      // the whole `hash` check.
      const int64_t t0 = NowNs();
      buffers::ExitCheckResult result = buffers::RunExitCheck(*table, buffers::ExitCheckPolicy::kAlways, kernel);
      check_ns = NowNs() - t0;
      after_check = SampleSelf();
      if (!result.leaks.empty()) return absl::InternalError("exit check found a leak in a clean table");
      s.bytes_per_backend = table->MemoryBytes();
    }
    const ResourceSample life = SampleSelf() - start;
    s.exit_check_us = static_cast<double>(check_ns) / 1e3;
    s.exit_minor_faults = static_cast<double>((after_check - before_check).minor_faults);
    s.lifetime_us = static_cast<double>(life.wall_ns) / 1e3;
    s.lifetime_minor_faults = static_cast<double>(life.minor_faults);
  }
  if constexpr (T::kLayout == Layout::kArray) TimeWarmScan(warm.ints, kernel, repetition % 2 == 1, s);
  if constexpr (T::kLayout == Layout::kBytes) TimeWarmScan(warm.bytes, kernel, repetition % 2 == 1, s);
  return absl::OkStatus();
}

Cell Median(const std::vector<Sample>& samples, double Sample::*field, double scale = 1) {
  std::vector<double> values;
  for (const Sample& s : samples) {
    if (s.*field >= 0) values.push_back(s.*field * scale);
  }
  if (values.empty()) return std::monostate{};
  return Summarize(values).median;
}

// Ratios between layouts at the same size, from medians of the same run:
// {"exit_check_array_over_hash": {"8GB": 61234.5, ...}, ...}. Only the pairs
// whose both layouts were measured appear.
nlohmann::json SameRunRatios(const std::vector<Config>& configs, const std::vector<std::vector<Sample>>& samples,
                             const std::vector<buffers::SharedBuffers>& sizes) {
  auto find = [&](Layout layout, uint32_t nbuffers) -> const std::vector<Sample>* {
    for (size_t i = 0; i < configs.size(); ++i) {
      if (configs[i].layout == layout && configs[i].size.nbuffers == nbuffers) return &samples[i];
    }
    return nullptr;
  };
  nlohmann::json ratios = nlohmann::json::object();
  for (const auto& size : sizes) {
    const std::string name = buffers::FormatSize(size.bytes);
    const auto* array = find(Layout::kArray, size.nbuffers);
    const auto* bytes = find(Layout::kBytes, size.nbuffers);
    const auto* hash = find(Layout::kHash, size.nbuffers);
    auto exit_us = [](const Sample& s) { return s.exit_check_us; };
    if (array && hash) {
      ratios["exit_check_array_over_hash"][name] = MedianOf(*array, exit_us) / MedianOf(*hash, exit_us);
      for (size_t h = 0; h < std::size(kHeld); ++h) {
        auto pin = [h](const Sample& s) { return s.pin_unpin_ns[h]; };
        ratios[absl::StrCat("pin_unpin_hash_over_array_held_", kHeld[h])][name] =
            MedianOf(*hash, pin) / MedianOf(*array, pin);
      }
      auto random = [](const Sample& s) { return s.pin_unpin_ns_random; };
      ratios["pin_unpin_hash_over_array_random"][name] = MedianOf(*hash, random) / MedianOf(*array, random);
    }
    if (array && bytes) {
      ratios["exit_check_array_over_bytes"][name] = MedianOf(*array, exit_us) / MedianOf(*bytes, exit_us);
    }
  }
  return ratios;
}

// One line per ratio, sizes in the order the user gave them.
void PrintRatios(const nlohmann::json& ratios, const std::vector<buffers::SharedBuffers>& sizes, std::ostream& out) {
  if (ratios.empty()) return;
  out << "\nSame-run ratios of medians:\n";
  for (const auto& [key, by_size] : ratios.items()) {
    out << absl::StrFormat("  %-36s", key);
    for (const auto& size : sizes) {
      const std::string name = buffers::FormatSize(size.bytes);
      if (!by_size.contains(name)) continue;
      const double v = by_size[name].get<double>();
      out << absl::StrFormat("  %s %s", name, v >= 100 ? absl::StrFormat("%.0fx", v) : absl::StrFormat("%.2fx", v));
    }
    out << "\n";
  }
}

}  // namespace

std::string LayoutsUsage() {
  return absl::StrCat(
      "usage: backendlab layouts [flags]\n"
      "Compares the backend-private buffer refcount layouts (array, bytes, hash):\n"
      "bytes per backend, pin+unpin cost, exit-check cost on a fresh table with its\n"
      "page faults, and warm-scan speed against a streaming-read baseline.\n\n",
      FlagsHelp(kFlags));
}

absl::Status RunLayoutsCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::vector<std::string>> size_names = flags->GetList("shared-buffers");
  if (!size_names.ok()) return size_names.status();
  absl::StatusOr<std::vector<std::string>> layout_names = flags->GetList("layouts");
  if (!layout_names.ok()) return layout_names.status();
  absl::StatusOr<ScanKernel> kernel = buffers::ParseScanKernel(flags->Get("kernel"));
  if (!kernel.ok()) return kernel.status();
  absl::StatusOr<int64_t> repetitions = flags->GetInt("repetitions", 1, 1000);
  if (!repetitions.ok()) return repetitions.status();

  std::vector<Config> configs;
  std::vector<buffers::SharedBuffers> sizes;
  for (const std::string& name : *size_names) {
    absl::StatusOr<buffers::SharedBuffers> size = buffers::ParseSharedBuffers(name);
    if (!size.ok()) return size.status();
    sizes.push_back(*size);
  }
  std::vector<Layout> layouts;
  for (const std::string& name : *layout_names) {
    absl::StatusOr<Layout> layout = buffers::ParseLayout(name);
    if (!layout.ok()) return layout.status();
    layouts.push_back(*layout);
  }
  for (const auto& size : sizes) {
    for (Layout layout : layouts) configs.push_back({layout, size});
  }

  std::map<uint32_t, WarmTables> warm;
  for (const auto& size : sizes) {
    WarmTables& w = warm[size.nbuffers];
    w.ints.assign(size.nbuffers, 0);
    w.bytes.assign(size.nbuffers, 0);
  }

  std::vector<std::vector<Sample>> samples(configs.size());
  absl::Status measured = RunInterleaved("layouts", *repetitions, configs.size(), [&](size_t index, int64_t rep) {
    const Config& c = configs[index];
    Sample s;
    absl::Status status = buffers::WithLayout(c.layout, [&]<RefCountTable T>() {
      return MeasureOnce<T>(c.size.nbuffers, *kernel, warm[c.size.nbuffers], static_cast<int>(rep), s);
    });
    if (status.ok()) samples[index].push_back(s);
    return status;
  });
  if (!measured.ok()) return measured;

  std::vector<Column> columns = {
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
  };
  Report report(columns);
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const std::vector<Sample>& ss = samples[i];
    std::vector<double> exit_us;
    for (const Sample& s : ss) exit_us.push_back(s.exit_check_us);
    const Summary exit_summary = Summarize(exit_us);
    Cell scan = Median(ss, &Sample::scan_gbps), read = Median(ss, &Sample::read_baseline_gbps);
    Cell ratio = std::monostate{};
    if (std::holds_alternative<double>(scan)) ratio = std::get<double>(scan) / std::get<double>(read);
    // Cells built in place: GCC 12 warns falsely (maybe-uninitialized) when a
    // temporary variant holding a string is moved into the vector.
    std::vector<Cell> row;
    row.emplace_back(std::in_place_type<std::string>, buffers::LayoutName(c.layout));
    row.emplace_back(std::in_place_type<std::string>, buffers::FormatSize(c.size.bytes));
    row.push_back(static_cast<int64_t>(c.size.bytes));
    row.push_back(static_cast<int64_t>(c.size.nbuffers));
    row.push_back(static_cast<int64_t>(ss.front().bytes_per_backend));
    for (size_t h = 0; h < std::size(kHeld); ++h) {
      std::vector<double> v;
      for (const Sample& s : ss) v.push_back(s.pin_unpin_ns[h]);
      row.push_back(Summarize(v).median);
    }
    row.push_back(Median(ss, &Sample::pin_unpin_ns_random));
    row.push_back(exit_summary.median);
    row.push_back(exit_summary.p10);
    row.push_back(exit_summary.p90);
    row.push_back(Median(ss, &Sample::exit_minor_faults));
    row.push_back(Median(ss, &Sample::lifetime_us));
    row.push_back(Median(ss, &Sample::lifetime_minor_faults));
    row.push_back(scan);
    row.push_back(read);
    row.push_back(ratio);
    report.AddRow(std::move(row));
  }

  nlohmann::json ratios = SameRunRatios(configs, samples, sizes);

  nlohmann::json header = MachineHeader();
  header["command"] = "layouts";
  header["repetitions"] = *repetitions;
  header["exit_check_policy"] = "always";
  header["scan_kernel"] = buffers::ScanKernelName(*kernel);
  header["simd"] = buffers::SimdImplementationName();
  header["fresh_pins"] = kFreshPins;
  header["ratios"] = ratios;
  report.SetHeader(header);

  out << absl::StrFormat(
      "backendlab layouts: PrivateRefCount layouts, %d interleaved repetitions, medians\n", *repetitions);
  out << MachineLine(header) << "; exit check: policy always, kernel " << buffers::ScanKernelName(*kernel)
      << (*kernel == ScanKernel::kSimd ? " (" + std::string(buffers::SimdImplementationName()) + ")" : "") << "\n\n";
  report.PrintText(out);
  out << "\npin ns: one pin+unpin pair with 1, 8 or 64 distinct buffers held at the peak;\n"
         "  random: one at a time, 65536 random buffers over all of NBuffers, pages already touched.\n"
         "exit check: a fresh table (calloc, "
      << kFreshPins
      << " pins) scanned at exit; its faults are the zero pages the scan maps.\n"
         "lifetime: allocate + pins + exit check + free, as one backend would.\n"
         "scan/read: warm best-kernel scan against a streaming read of the same bytes.\n";
  PrintRatios(ratios, sizes, out);
  if (!kAssertChecking) {
    out << "Policies `assert` (this build has no assert checking) and `off` run no exit check: 0 us.\n";
  }

  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
