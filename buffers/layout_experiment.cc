// The layout experiment's rounds, its warm-scan timing and its same-run ratios.
#include "buffers/layout_experiment.h"

#include <algorithm>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "buffers/layout_dispatch.h"

namespace backendlab::buffers {
namespace {

// Pairs per pin+unpin timing: a multiple of every held count, ~0.5 ms of work.
constexpr int kPairsPerTiming = 192'000;
// A warm scan is repeated until it has read this many bytes, so small tables
// are timed over more than a timer tick.
constexpr size_t kScanBytesPerTiming = size_t{64} << 20;

// One round's numbers for one configuration.
struct Sample {
  std::array<double, std::size(kHeldCounts)> pin_unpin_ns{};
  double pin_unpin_ns_random = 0;  // one at a time, spread over all of NBuffers
  double exit_check_us = 0;
  double exit_minor_faults = 0;
  double lifetime_us = 0;
  double lifetime_minor_faults = 0;
  double scan_gbps = -1;  // < 0: this layout has no scan
  double read_baseline_gbps = -1;
  size_t bytes_per_backend = 0;
};

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
      sink += FindNonZero(kernel, table.data(), table.size());
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
      sink |= StreamingRead(table.data(), bytes);
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
absl::Status MeasureOnce(uint32_t nbuffers, ScanKernel kernel, const WarmTables& warm, int64_t round, Sample& s) {
  // pin+unpin with 1, 8 and 64 distinct buffers held at the peak.
  {
    absl::StatusOr<T> table = T::Create(nbuffers);
    if (!table.ok()) return table.status();
    for (size_t h = 0; h < std::size(kHeldCounts); ++h) {
      const std::vector<BufferId> buffers = SpreadBuffers(kHeldCounts[h], nbuffers, 1000 + h);
      const int pairs = kPairsPerTiming / kHeldCounts[h];
      const int64_t t0 = NowNs();
      const bool ok = PinUnpinHeld(*table, buffers, pairs);
      const int64_t t1 = NowNs();
      if (!ok) return absl::InternalError("pin/unpin failed during timing");
      s.pin_unpin_ns[h] = static_cast<double>(t1 - t0) / static_cast<double>(pairs * buffers.size());
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
  const std::vector<BufferId> touched = SpreadBuffers(kFreshPins, nbuffers, 7);
  absl::StatusOr<FreshBackend> fresh = RunFreshBackend<T>(nbuffers, touched, ExitCheckPolicy::kAlways, kernel);
  if (!fresh.ok()) return fresh.status();
  s.bytes_per_backend = fresh->bytes;
  s.exit_check_us = static_cast<double>(fresh->exit_check_ns) / 1e3;
  s.exit_minor_faults = static_cast<double>(fresh->exit_minor_faults);
  s.lifetime_us = static_cast<double>(fresh->lifetime.wall_ns) / 1e3;
  s.lifetime_minor_faults = static_cast<double>(fresh->lifetime.minor_faults);
  if constexpr (T::kLayout == Layout::kArray) TimeWarmScan(warm.ints, kernel, round % 2 == 1, s);
  if constexpr (T::kLayout == Layout::kBytes) TimeWarmScan(warm.bytes, kernel, round % 2 == 1, s);
  return absl::OkStatus();
}

// The median of a field that only some layouts have (< 0 elsewhere).
std::optional<double> MedianIfMeasured(const std::vector<Sample>& samples, double Sample::*field) {
  std::vector<double> values;
  for (const Sample& s : samples) {
    if (s.*field >= 0) values.push_back(s.*field);
  }
  if (values.empty()) return std::nullopt;
  return Summarize(values).median;
}

LayoutRow Summarize(Layout layout, SharedBuffers size, const std::vector<Sample>& ss) {
  LayoutRow row{.layout = layout, .size = size};
  row.bytes_per_backend = ss.front().bytes_per_backend;
  for (size_t h = 0; h < std::size(kHeldCounts); ++h) {
    row.pin_unpin_ns[h] = MedianOf(ss, [h](const Sample& s) { return s.pin_unpin_ns[h]; });
  }
  row.pin_unpin_ns_random = MedianOf(ss, [](const Sample& s) { return s.pin_unpin_ns_random; });
  std::vector<double> exit_us;
  for (const Sample& s : ss) exit_us.push_back(s.exit_check_us);
  row.exit_check_us = backendlab::Summarize(exit_us);
  row.exit_minor_faults = MedianOf(ss, [](const Sample& s) { return s.exit_minor_faults; });
  row.lifetime_us = MedianOf(ss, [](const Sample& s) { return s.lifetime_us; });
  row.lifetime_minor_faults = MedianOf(ss, [](const Sample& s) { return s.lifetime_minor_faults; });
  row.scan_gbps = MedianIfMeasured(ss, &Sample::scan_gbps);
  row.read_baseline_gbps = MedianIfMeasured(ss, &Sample::read_baseline_gbps);
  return row;
}

// Ratios between layouts at the same size, paired within each round. Only
// the pairs whose both layouts were measured appear; names in sorted order.
template <typename Config>
std::vector<LayoutRatio> PairedRatios(const std::vector<Config>& configs, const std::vector<std::vector<Sample>>& samples,
                                      const std::vector<SharedBuffers>& sizes) {
  auto find = [&](Layout layout, uint32_t nbuffers) -> const std::vector<Sample>* {
    for (size_t i = 0; i < configs.size(); ++i) {
      if (configs[i].layout == layout && configs[i].size.nbuffers == nbuffers) return &samples[i];
    }
    return nullptr;
  };
  std::map<std::string, LayoutRatio> ratios;
  // `name`: a's `field` over b's, round by round.
  auto add = [&](const std::string& name, SharedBuffers size, const std::vector<Sample>& a, const std::vector<Sample>& b,
                 auto field) {
    std::vector<double> fa, fb;
    for (size_t r = 0; r < a.size() && r < b.size(); ++r) {
      fa.push_back(field(a[r]));
      fb.push_back(field(b[r]));
    }
    LayoutRatio& ratio = ratios[name];
    ratio.name = name;
    ratio.by_size.emplace_back(size, PairedRatio(fa, fb, Better::kLower));
  };
  auto exit_check = [](const Sample& s) { return s.exit_check_us; };
  auto random_pins = [](const Sample& s) { return s.pin_unpin_ns_random; };
  for (const SharedBuffers& size : sizes) {
    const std::vector<Sample>* array = find(Layout::kArray, size.nbuffers);
    const std::vector<Sample>* bytes = find(Layout::kBytes, size.nbuffers);
    const std::vector<Sample>* hash = find(Layout::kHash, size.nbuffers);
    const std::vector<Sample>* hash_keys = find(Layout::kHashKeys, size.nbuffers);
    const std::vector<Sample>* array_touched = find(Layout::kArrayTouched, size.nbuffers);
    // pin+unpin of `other` over array's, at every held count and spread out.
    auto pins_over_array = [&](const std::string& prefix, const std::vector<Sample>& other) {
      for (size_t h = 0; h < std::size(kHeldCounts); ++h) {
        add(absl::StrCat(prefix, "_over_array_held_", kHeldCounts[h]), size, other, *array,
            [h](const Sample& s) { return s.pin_unpin_ns[h]; });
      }
      add(prefix + "_over_array_random", size, other, *array, random_pins);
    };
    if (array && hash) {
      add("exit_check_array_over_hash", size, *array, *hash, exit_check);
      pins_over_array("pin_unpin_hash", *hash);
    }
    if (array && bytes) add("exit_check_array_over_bytes", size, *array, *bytes, exit_check);
    if (array && hash_keys) pins_over_array("pin_unpin_hash_keys", *hash_keys);
    if (array && array_touched) add("exit_check_array_over_array_touched", size, *array, *array_touched, exit_check);
  }
  std::vector<LayoutRatio> out;
  for (auto& [name, ratio] : ratios) out.push_back(std::move(ratio));
  return out;
}

absl::Status CheckOptions(const LayoutExperimentOptions& options) {
  if (options.sizes.empty()) return absl::InvalidArgumentError("no shared_buffers size to measure");
  if (options.layouts.empty()) return absl::InvalidArgumentError("no layout to measure");
  if (options.rounds < 1) return absl::InvalidArgumentError("at least one round is needed");
  for (size_t i = 0; i < options.sizes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (options.sizes[i].nbuffers == options.sizes[j].nbuffers) {
        return absl::InvalidArgumentError(
            absl::StrCat("shared_buffers size ", FormatSize(options.sizes[i].bytes), " given twice"));
      }
    }
  }
  for (size_t i = 0; i < options.layouts.size(); ++i) {
    if (std::find(options.layouts.begin(), options.layouts.begin() + static_cast<ptrdiff_t>(i), options.layouts[i]) !=
        options.layouts.begin() + static_cast<ptrdiff_t>(i)) {
      return absl::InvalidArgumentError(absl::StrCat("layout '", std::string(LayoutName(options.layouts[i])), "' given twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

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

absl::StatusOr<LayoutExperimentResult> RunLayoutExperiment(const LayoutExperimentOptions& options) {
  if (absl::Status checked = CheckOptions(options); !checked.ok()) return checked;
  InstallStopHandlers();

  struct Config {
    Layout layout;
    SharedBuffers size;
  };
  std::vector<Config> configs;
  for (const SharedBuffers& size : options.sizes) {
    for (Layout layout : options.layouts) configs.push_back({layout, size});
  }
  std::map<uint32_t, WarmTables> warm;
  for (const SharedBuffers& size : options.sizes) {
    WarmTables& w = warm[size.nbuffers];
    w.ints.assign(size.nbuffers, 0);
    w.bytes.assign(size.nbuffers, 0);
  }

  std::vector<std::vector<Sample>> samples(configs.size());
  absl::Status measured = RunInterleaved("layouts", options.rounds, configs.size(), [&](size_t index, int64_t round) {
    const Config& c = configs[index];
    Sample s;
    absl::Status status = WithLayout(c.layout, [&]<RefCountTable T>() {
      return MeasureOnce<T>(c.size.nbuffers, options.kernel, warm[c.size.nbuffers], round, s);
    });
    if (status.ok()) samples[index].push_back(s);
    return status;
  });
  if (!measured.ok()) return measured;

  LayoutExperimentResult result;
  for (size_t i = 0; i < configs.size(); ++i) result.rows.push_back(Summarize(configs[i].layout, configs[i].size, samples[i]));
  result.ratios = PairedRatios(configs, samples, options.sizes);
  return result;
}

}  // namespace backendlab::buffers
