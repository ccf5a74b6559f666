// The xlog experiment: one measurement window, the coherence ping-pong, the
// interleaved rounds, the same-run ratios and the model's rows.
#include "xlog/xlog_experiment.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/cpus.h"
#include "base/interleaved.h"
#include "base/resource_usage.h"
#include "xlog/tracker_dispatch.h"
#include "xlog/wal.h"

namespace backendlab::xlog {

std::string_view ReaderRateName(ReaderRate rate) { return NameOf(rate, kReaderRateNames); }
absl::StatusOr<ReaderRate> ParseReaderRate(std::string_view name) { return ParseName(name, kReaderRateNames, "reader rate"); }

double ReaderCallsPerSecond(ReaderRate rate) {
  switch (rate) {
    case ReaderRate::kOff: return 0;
    case ReaderRate::kBgwriter: return 1.0 / 15;
    case ReaderRate::k100Hz: return 100;
    case ReaderRate::kMax: break;
  }
  return std::numeric_limits<double>::infinity();
}

namespace {

// One insert in this many is timed on its own: the clock costs about as much
// as a small insert, so timing every one would halve the rate measured.
constexpr int kTimedEvery = 16;
// Latency samples kept per thread: preallocated, so the hot loop never
// allocates; a reader past it overwrites the oldest.
constexpr size_t kMaxSamples = size_t{1} << 15;

uint64_t NextRandom(uint64_t& state) {
  // xorshift64*: a few cycles, good enough to pick unimportant records.
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

double Percentile(std::vector<uint32_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

uint32_t ElapsedNs(int64_t t0, int64_t t1) {
  return static_cast<uint32_t>(std::clamp<int64_t>(t1 - t0, 0, std::numeric_limits<uint32_t>::max()));
}

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

struct WorkerOut {
  int64_t inserts = 0;
  int64_t contended = 0;
  std::vector<uint32_t> samples;
};

// The clock's own cost: the least of back-to-back readings.
double ClockCostNs() {
  double clock_ns = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 64; ++i) {
    const int64_t a = NowNs();
    const int64_t b = NowNs();
    clock_ns = std::min(clock_ns, static_cast<double>(b - a));
  }
  return clock_ns;
}

// A window's figures from its threads' counts and timings, net of the
// clock's own cost.
XlogSample SampleOf(std::vector<WorkerOut>& out, WorkerOut& reader_out, int64_t t0, int64_t t1, double clock_ns) {
  XlogSample s;
  s.seconds = static_cast<double>(t1 - t0) * 1e-9;
  std::vector<uint32_t> latencies;
  for (WorkerOut& o : out) {
    s.inserts += o.inserts;
    s.contended += o.contended;
    latencies.insert(latencies.end(), o.samples.begin(), o.samples.end());
  }
  s.records_per_second = static_cast<double>(s.inserts) / s.seconds;
  s.clock_ns = clock_ns;
  auto net = [&](double ns) { return std::max(0.0, ns - clock_ns); };
  s.insert_p50_ns = net(Percentile(latencies, 0.50));
  s.insert_p99_ns = net(Percentile(latencies, 0.99));
  s.reader_calls = reader_out.inserts;
  if (!reader_out.samples.empty()) s.reader_ns = net(Percentile(reader_out.samples, 0.50));
  return s;
}

template <LastImportantTracker T>
absl::StatusOr<XlogSample> MeasureOnce(const XlogConfig& c, std::span<std::byte> ring, uint64_t seed) {
  auto wal = std::make_unique<Wal<T>>(c.locks, ring);
  std::atomic<bool> go{false}, stop{false};
  std::atomic<int> ready{0};  // threads started and waiting for `go`
  std::mutex mu;  // the reader's sleep only; never on an inserter's path
  std::condition_variable stop_cv;
  std::vector<WorkerOut> out(static_cast<size_t>(c.workers));
  WorkerOut reader_out;
  for (WorkerOut& o : out) o.samples.reserve(kMaxSamples);
  reader_out.samples.reserve(kMaxSamples);
  const uint64_t unimportant_below = static_cast<uint64_t>(c.unimportant_percent);

  // Worker i runs on CPU i mod n: two workers on two cores then always
  // means two cores (left to the scheduler, both sometimes shared one core
  // for a window, moved no line, and ran at the 1-worker rate: a bimodal
  // 2-worker figure). The reader is left to the scheduler.
  const std::vector<int> cpus = AllowedCpus();
  auto worker = [&](int w) {
    if (!cpus.empty()) (void)PinTo(cpus[static_cast<size_t>(w) % cpus.size()]);
    std::vector<std::byte> record(c.record_size, std::byte{0x5a});
    const std::span<const std::byte> r(record);
    Inserter me(w, c.locks);
    uint64_t rng = (seed ^ (uint64_t(w + 1) * 0x9E3779B97F4A7C15ULL)) | 1;
    WorkerOut& o = out[static_cast<size_t>(w)];
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    int64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (int k = 1; k < kTimedEvery; ++k) wal->Insert(me, r, NextRandom(rng) % 100 >= unimportant_below);
      const bool important = NextRandom(rng) % 100 >= unimportant_below;
      const int64_t t0 = NowNs();
      wal->Insert(me, r, important);
      const int64_t t1 = NowNs();
      if (o.samples.size() < kMaxSamples) o.samples.push_back(ElapsedNs(t0, t1));
      n += kTimedEvery;
    }
    o.inserts = n;
    o.contended = me.contended;
  };

  auto reader = [&] {
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    Lsn sink = 0;
    int64_t calls = 0;
    auto timed_call = [&] {
      const int64_t t0 = NowNs();
      sink ^= wal->LastImportant();
      const int64_t t1 = NowNs();
      if (reader_out.samples.size() < kMaxSamples) {
        reader_out.samples.push_back(ElapsedNs(t0, t1));
      } else {
        reader_out.samples[static_cast<size_t>(calls) % kMaxSamples] = ElapsedNs(t0, t1);
      }
      ++calls;
    };
    if (c.reader == ReaderRate::kMax) {
      while (!stop.load(std::memory_order_relaxed)) timed_call();
    } else {
      // A random phase within the first period, so that over many windows
      // the calls per window average the rate, even at once per 15 s.
      const double period_ns = 1e9 / ReaderCallsPerSecond(c.reader);
      uint64_t rng = seed | 1;
      const double phase = static_cast<double>(NextRandom(rng) >> 11) / static_cast<double>(uint64_t{1} << 53);
      auto next = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(phase * period_ns));
      std::unique_lock lock(mu);
      while (!stop_cv.wait_until(lock, next, [&] { return stop.load(); })) {
        lock.unlock();
        timed_call();
        lock.lock();
        next += std::chrono::nanoseconds(static_cast<int64_t>(period_ns));
      }
    }
    reader_out.inserts = calls;
    asm volatile("" : : "r"(sink));  // the reads are kept: their value is used
  };

  const double clock_ns = ClockCostNs();
  std::vector<std::thread> threads;
  try {
    for (int w = 0; w < c.workers; ++w) threads.emplace_back(worker, w);
    if (c.reader != ReaderRate::kOff) threads.emplace_back(reader);
  } catch (const std::system_error& e) {
    stop.store(true);
    go.store(true, std::memory_order_release);
    for (std::thread& t : threads) t.join();
    return absl::ResourceExhaustedError(absl::StrCat("cannot start a thread: ", e.what()));
  }
  // The window opens once every thread is waiting at the line.
  while (ready.load() < static_cast<int>(threads.size())) std::this_thread::yield();
  const int64_t t0 = NowNs();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(absl::ToChronoNanoseconds(c.duration));
  {
    std::lock_guard lock(mu);
    stop.store(true);
  }
  const int64_t t1 = NowNs();
  stop_cv.notify_all();
  for (std::thread& t : threads) t.join();
  return SampleOf(out, reader_out, t0, t1, clock_ns);
}

absl::Status ValidateOptions(const XlogExperimentOptions& o) {
  auto distinct = [](const auto& values, std::string_view what) -> absl::Status {
    if (values.empty()) return absl::InvalidArgumentError(absl::StrCat("no ", std::string(what), " given"));
    std::set<std::decay_t<decltype(values[0])>> seen;
    for (const auto& v : values) {
      if (!seen.insert(v).second) return absl::InvalidArgumentError(absl::StrCat(std::string(what), " lists a value twice"));
    }
    return absl::OkStatus();
  };
  for (absl::Status s : {distinct(o.variants, "variants"), distinct(o.workers, "workers"),
                         distinct(o.record_sizes, "record sizes"), distinct(o.readers, "readers"),
                         distinct(o.locks, "locks")}) {
    if (!s.ok()) return s;
  }
  for (int w : o.workers) {
    if (w < 1 || w > kMaxWorkers) return absl::InvalidArgumentError(absl::StrCat("workers: ", w, " is not in 1..", kMaxWorkers));
  }
  for (int l : o.locks) {
    if (l < 1 || l > kMaxLocks) return absl::InvalidArgumentError(absl::StrCat("locks: ", l, " is not in 1..", kMaxLocks));
  }
  for (uint32_t size : o.record_sizes) {
    if (size < kRecordAlign || size > kMaxRecordSize || size % kRecordAlign != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("record size ", size, " is not a multiple of 8 from 8 to ", kMaxRecordSize));
    }
  }
  for (int w : o.model_workers) {
    if (w < 2 || w > 100000) return absl::InvalidArgumentError(absl::StrCat("model workers: ", w, " is not in 2..100000"));
  }
  if (o.unimportant_percent < 0 || o.unimportant_percent > 100) {
    return absl::InvalidArgumentError("unimportant percent must be in 0..100");
  }
  if (o.rounds < 1) return absl::InvalidArgumentError("rounds must be at least 1");
  if (o.window < absl::Milliseconds(1)) return absl::InvalidArgumentError("a window must be at least 1 ms");
  return absl::OkStatus();
}

using RowKey = std::tuple<Tracker, int, uint32_t, ReaderRate, int>;  // variant, workers, size, reader, locks
RowKey KeyOf(const XlogConfig& c) { return {c.variant, c.workers, c.record_size, c.reader, c.locks}; }

// Row a over row b, paired within each round; a row against itself is 1.
std::optional<RatioEstimate> Ratio(const XlogRow& a, const XlogRow& b, const std::vector<double> XlogRow::*series,
                                   Better better) {
  const std::vector<double>& x = a.*series;
  const std::vector<double>& y = b.*series;
  if (&a == &b) {
    const auto positive = std::count_if(x.begin(), x.end(), [](double v) { return v > 0; });
    if (positive == 0) return std::nullopt;
    return SelfRatio(static_cast<int>(positive));
  }
  const RatioEstimate r = PairedRatio(x, y, better);
  if (r.rounds == 0) return std::nullopt;
  return r;
}

XlogRow SummarizeRow(const XlogConfig& c, const std::vector<XlogSample>& samples) {
  XlogRow row;
  row.config = c;
  std::vector<double> rates, reader_ns;
  double calls = 0, seconds = 0, waits = 0, inserts = 0;
  for (const XlogSample& s : samples) {
    rates.push_back(s.records_per_second);
    if (s.reader_ns >= 0) reader_ns.push_back(s.reader_ns);
    row.records_per_second_by_round.push_back(s.records_per_second);
    row.insert_p99_ns_by_round.push_back(s.insert_p99_ns);
    row.reader_ns_by_round.push_back(std::max(s.reader_ns, 0.0));
    calls += static_cast<double>(s.reader_calls);
    seconds += s.seconds;
    waits += static_cast<double>(s.contended);
    inserts += static_cast<double>(s.inserts);
  }
  row.records_per_second = backendlab::Summarize(rates);
  row.insert_p50_ns = MedianOf(samples, [](const XlogSample& s) { return s.insert_p50_ns; });
  row.insert_p99_ns = MedianOf(samples, [](const XlogSample& s) { return s.insert_p99_ns; });
  if (!reader_ns.empty()) row.reader_ns = backendlab::Summarize(reader_ns).median;
  row.reader_calls_per_second = seconds > 0 ? calls / seconds : 0;
  row.contended_share = inserts > 0 ? waits / inserts : 0;
  return row;
}

void AddRatios(std::vector<XlogRow>& rows) {
  std::map<RowKey, const XlogRow*> by_key;
  for (const XlogRow& r : rows) by_key[KeyOf(r.config)] = &r;
  for (XlogRow& r : rows) {
    RowKey base = KeyOf(r.config);
    std::get<0>(base) = Tracker::kPerLock;
    if (auto it = by_key.find(base); it != by_key.end()) {
      const XlogRow& b = *it->second;
      r.records_vs_per_lock = Ratio(r, b, &XlogRow::records_per_second_by_round, Better::kHigher);
      r.p99_vs_per_lock = Ratio(r, b, &XlogRow::insert_p99_ns_by_round, Better::kLower);
      r.reader_vs_per_lock = Ratio(r, b, &XlogRow::reader_ns_by_round, Better::kLower);
    }
    RowKey off = KeyOf(r.config);
    std::get<3>(off) = ReaderRate::kOff;
    if (auto it = by_key.find(off); it != by_key.end()) {
      r.records_vs_reader_off = Ratio(r, *it->second, &XlogRow::records_per_second_by_round, Better::kHigher);
    }
  }
}

void AddModel(const XlogExperimentOptions& o, XlogExperimentResult& result) {
  if (!result.coherence_ns) {
    result.model_missing = "the coherence latency could not be measured (it needs two CPUs)";
    return;
  }
  std::map<RowKey, const XlogRow*> by_key;
  for (const XlogRow& r : result.rows) by_key[KeyOf(r.config)] = &r;
  for (int locks : o.locks) {
    for (uint32_t size : o.record_sizes) {
      // per-lock first: the central variants take its reservation's transfers.
      std::optional<double> reservation_transfers;
      std::vector<Tracker> order = {Tracker::kPerLock};
      for (Tracker v : o.variants) {
        if (v != Tracker::kPerLock) order.push_back(v);
      }
      std::vector<ModelRow> rows;
      for (Tracker v : order) {
        auto one = by_key.find({v, 1, size, ReaderRate::kOff, locks});
        auto two = by_key.find({v, 2, size, ReaderRate::kOff, locks});
        if (one == by_key.end() || two == by_key.end()) continue;
        ModelInputs in;
        in.variant = v;
        in.locks = locks;
        in.important_share = 1 - o.unimportant_percent / 100.0;
        in.coherence_ns = result.coherence_ns->median;
        in.records_per_second_1 = one->second->records_per_second.median;
        in.records_per_second_2 = two->second->records_per_second.median;
        in.reservation_transfers = reservation_transfers;
        absl::StatusOr<ModelCalibration> cal = CalibrateModel(in);
        if (!cal.ok()) continue;
        if (v == Tracker::kPerLock) reservation_transfers = cal->reservation_transfers;
        ModelRow row{size, *cal, {}};
        for (int n : o.model_workers) row.points.push_back({n, PredictRecordsPerSecond(*cal, n), std::nullopt});
        rows.push_back(std::move(row));
      }
      // Back in the order the variants were given.
      for (Tracker v : o.variants) {
        for (ModelRow& r : rows) {
          if (r.calibration.inputs.variant == v) result.model.push_back(std::move(r));
        }
      }
    }
  }
  for (ModelRow& m : result.model) {
    for (const ModelRow& base : result.model) {
      if (base.calibration.inputs.variant != Tracker::kPerLock || base.record_size != m.record_size ||
          base.calibration.inputs.locks != m.calibration.inputs.locks) {
        continue;
      }
      for (size_t i = 0; i < m.points.size(); ++i) {
        m.points[i].vs_per_lock = m.points[i].records_per_second / base.points[i].records_per_second;
      }
    }
  }
  if (result.model.empty()) {
    result.model_missing = "the model is calibrated on 1 and 2 workers with the reader off: run them (`workers`=1,2 `readers`=off,...)";
  }
}

}  // namespace

int AllowedCpuCount() { return static_cast<int>(AllowedCpus().size()); }

absl::StatusOr<XlogSample> MeasureXlogOnce(const XlogConfig& config, std::span<std::byte> ring, uint64_t seed) {
  return WithTracker(config.variant, [&]<LastImportantTracker T>() { return MeasureOnce<T>(config, ring, seed); });
}

absl::StatusOr<double> MeasureCoherenceLatencyNs(int64_t round_trips) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) return absl::FailedPreconditionError("the coherence latency needs two CPUs to run on");
  struct alignas(internal::kPadBytes) Line {
    std::atomic<int64_t> value{0};
  };
  Line line;
  std::atomic<int> pinned{0};
  int64_t elapsed = 0;
  // Each side waits for the other's number, then writes its own: every step
  // is one transfer of the line to the other core.
  auto side = [&](int cpu, int64_t first, bool timed) {
    if (PinTo(cpu)) pinned.fetch_add(1);
    const int64_t t0 = NowNs();
    for (int64_t i = 0; i < round_trips; ++i) {
      const int64_t wait_for = 2 * i + first;
      while (line.value.load(std::memory_order_acquire) != wait_for) internal::CpuRelax();
      line.value.store(wait_for + 1, std::memory_order_release);
    }
    if (timed) elapsed = NowNs() - t0;
  };
  try {
    std::thread b(side, cpus[1], 1, false);
    std::thread a(side, cpus[0], 0, true);
    a.join();
    b.join();
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot start a thread: ", e.what()));
  }
  if (pinned.load() != 2) return absl::FailedPreconditionError("cannot pin the coherence threads to two CPUs");
  return static_cast<double>(elapsed) / static_cast<double>(2 * round_trips);
}

absl::StatusOr<XlogExperimentResult> RunXlogExperiment(const XlogExperimentOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  std::vector<XlogConfig> configs;
  for (int locks : options.locks) {
    for (uint32_t size : options.record_sizes) {
      for (int workers : options.workers) {
        for (ReaderRate reader : options.readers) {
          for (Tracker v : options.variants) {
            configs.push_back({v, workers, size, reader, locks, options.unimportant_percent, options.window});
          }
        }
      }
    }
  }
  // One ring for every window, touched once here so that no window pays its
  // page faults.
  std::vector<std::byte> ring(kRingBytes, std::byte{0});
  std::vector<std::vector<XlogSample>> samples(configs.size());
  std::vector<double> coherence;
  absl::Status coherence_status;
  absl::Status measured = RunInterleaved(
      "xlog", options.rounds, configs.size(),
      [&](size_t index, int64_t round) -> absl::Status {
        absl::StatusOr<XlogSample> s =
            MeasureXlogOnce(configs[index], ring, static_cast<uint64_t>(round) * 1'000'003 + index + 1);
        if (!s.ok()) return s.status();
        samples[index].push_back(*s);
        return absl::OkStatus();
      },
      [&](int64_t) -> absl::Status {
        absl::StatusOr<double> ns = MeasureCoherenceLatencyNs(20'000);
        if (ns.ok()) {
          coherence.push_back(*ns);
        } else {
          coherence_status = ns.status();
        }
        return absl::OkStatus();
      });
  if (!measured.ok()) return measured;

  XlogExperimentResult result;
  for (size_t i = 0; i < configs.size(); ++i) result.rows.push_back(SummarizeRow(configs[i], samples[i]));
  AddRatios(result.rows);
  if (!coherence.empty()) result.coherence_ns = backendlab::Summarize(coherence);
  std::vector<XlogSample> all;
  for (const std::vector<XlogSample>& v : samples) all.insert(all.end(), v.begin(), v.end());
  result.clock_ns = MedianOf(all, [](const XlogSample& s) { return s.clock_ns; });
  AddModel(options, result);
  return result;
}

}  // namespace backendlab::xlog
