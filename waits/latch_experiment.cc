// The latch ping-pong and the busy-owner SetLatch, in forked processes on
// shared memory, interleaved over the implementations.
#include "waits/latch_experiment.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/histogram.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "base/resource_usage.h"
#include "profiling/perf_events.h"
#include "waits/internal/children.h"
#include "waits/internal/experiment_clock.h"
#include "waits/internal/loop_counters.h"
#include "waits/internal/run_control.h"
#include "waits/internal/shared_memory.h"
#include "waits/latch_dispatch.h"
#include "waits/postmaster_death.h"

namespace backendlab::waits {
namespace {

using internal::ChildReport;
using internal::Children;
using internal::LoopCounters;
using internal::SharedArray;

using internal::kCountWarmup;
using internal::kMeasure;
using internal::kReapTimeoutMs;
using internal::kStop;
using internal::kWarmup;
using internal::kWarmupTime;
using internal::SleepUnlessStopped;
using internal::SumSyscalls;

// How many round-trip latencies a run keeps (4 MB, untouched pages free).
constexpr size_t kMaxLatencies = size_t{1} << 20;

inline void CpuRelax() { __builtin_ia32_pause(); }

// What one run of one latch gave.
struct RunFigures {
  double round_trips_per_second = 0;
  double user_us = 0, sys_us = 0;
  double busy_set_ns = 0;
  SyscallsPerOp syscalls, busy_set_syscalls, busy_owner_syscalls;
};

template <Latch L>
struct PingPongShared {
  typename L::Shared latch[2];  // [0] the pinger's, [1] the ponger's
  std::atomic<int64_t> ping{0};
  std::atomic<int64_t> pong{0};
  std::atomic<int32_t> phase{kWarmup};
  std::atomic<int64_t> latencies{0};
  ChildReport report[2];
};

template <Latch L>
struct BusyShared {
  typename L::Shared latch;
  std::atomic<int32_t> phase{kWarmup};
  ChildReport report[2];  // [0] the owner, [1] the setter
};

// The settings of one run that its children read.
struct RunSpec {
  int64_t counted_round_trips = 0;  // > 0: a counting pass of exactly this many; 0: timed, until kStop
  std::vector<std::string> count_names;
  int cpu[2] = {-1, -1};
  int death_fd = -1;
};

// PostgreSQL's waiting pattern: reset, check, wait at the bottom. False if
// the wait failed (the report says why).
template <Latch L, typename Cond>
bool WaitUntil(L& latch, ChildReport& report, Cond cond) {
  for (;;) {
    latch.Reset();
    if (cond()) return true;
    const uint32_t events = latch.Wait(-1);
    if (events & kWaitFailed) {
      report.Fail(absl::StrCat("wait failed: ", std::strerror(errno)));
      return false;
    }
    if (events & kPostmasterDeath) {
      report.Fail("the tool died");
      return false;
    }
  }
}

// The child's first steps: its CPU, its latch, its counters.
template <Latch L>
std::optional<L> OwnLatch(typename L::Shared& shared, const RunSpec& spec, int cpu, ChildReport& report,
                          std::optional<LoopCounters>& counters) {
  if (absl::Status s = internal::PinToCpu(cpu); !s.ok()) {
    report.Fail(std::string(s.message()));
    return std::nullopt;
  }
  absl::StatusOr<L> latch = L::Own(shared, spec.death_fd);
  if (!latch.ok()) {
    report.Fail(std::string(latch.status().message()));
    return std::nullopt;
  }
  if (!spec.count_names.empty()) {
    absl::StatusOr<LoopCounters> c = LoopCounters::Open(spec.count_names);
    if (!c.ok()) {
      report.Fail(std::string(c.status().message()));
      return std::nullopt;
    }
    counters = *std::move(c);
  }
  return *std::move(latch);
}

void RecordCpu(ChildReport& report, const internal::CpuTimes& start) {
  const internal::CpuTimes end = internal::OwnCpuTimes();
  report.user_ns = end.user_ns - start.user_ns;
  report.sys_ns = end.sys_ns - start.sys_ns;
}

template <Latch L>
int Pinger(PingPongShared<L>& s, const RunSpec& spec, uint32_t* latencies) {
  ChildReport& r = s.report[0];
  std::optional<LoopCounters> counters;
  std::optional<L> latch = OwnLatch<L>(s.latch[0], spec, spec.cpu[0], r, counters);
  if (!latch) return 1;
  while (s.latch[1].state.owner_pid.load(std::memory_order_acquire) == 0) {
    if (s.phase.load(std::memory_order_relaxed) == kStop) return 0;
    sched_yield();
  }
  const bool counting = spec.counted_round_trips > 0;
  const int64_t last = counting ? kCountWarmup + spec.counted_round_trips : INT64_MAX;
  const internal::CpuTimes cpu = internal::OwnCpuTimes();
  auto stopped = [&] { return s.phase.load(std::memory_order_relaxed) == kStop; };
  int64_t i = 0;
  while (i < last && !stopped()) {
    if (counting && i == kCountWarmup) counters->Begin();
    const bool measuring = s.phase.load(std::memory_order_relaxed) == kMeasure;
    const int64_t start = measuring ? NowNs() : 0;
    const int64_t n = ++i;
    s.ping.store(n, std::memory_order_release);
    L::Set(s.latch[1]);
    if (!WaitUntil(*latch, r, [&] { return s.pong.load(std::memory_order_acquire) == n || stopped(); })) return 1;
    if (measuring && s.pong.load(std::memory_order_relaxed) == n) {
      const int64_t k = s.latencies.fetch_add(1, std::memory_order_relaxed);
      if (latencies != nullptr && k < static_cast<int64_t>(kMaxLatencies)) {
        latencies[k] = static_cast<uint32_t>(std::min<int64_t>(NowNs() - start, UINT32_MAX));
      }
      ++r.measured_round_trips;
    }
  }
  if (counting && i == last) {
    counters->End(r);
    // One more ping, so that the ponger stops counting at the same point of
    // its loop as it started; then the end.
    s.ping.store(last + 1, std::memory_order_release);
    L::Set(s.latch[1]);
    if (!WaitUntil(*latch, r, [&] { return s.pong.load(std::memory_order_acquire) == last + 1 || stopped(); })) return 1;
  }
  RecordCpu(r, cpu);
  r.round_trips = i;
  s.ping.store(-1, std::memory_order_release);
  L::Set(s.latch[1]);
  return 0;
}

template <Latch L>
int Ponger(PingPongShared<L>& s, const RunSpec& spec) {
  ChildReport& r = s.report[1];
  std::optional<LoopCounters> counters;
  std::optional<L> latch = OwnLatch<L>(s.latch[1], spec, spec.cpu[1], r, counters);
  if (!latch) return 1;
  const bool counting = spec.counted_round_trips > 0;
  // Counted from the first counted ping to the one after the last, each
  // taken before answering it: the same number of waits and answers.
  const int64_t begin_at = counting ? kCountWarmup + 1 : -2;
  const int64_t end_at = counting ? kCountWarmup + spec.counted_round_trips + 1 : -2;
  const internal::CpuTimes cpu = internal::OwnCpuTimes();
  int64_t last = 0;
  for (;;) {
    latch->Reset();
    const int64_t p = s.ping.load(std::memory_order_acquire);
    if (p < 0) break;
    if (p != last) {
      if (p == begin_at) counters->Begin();
      if (p == end_at) counters->End(r);
      last = p;
      ++r.round_trips;
      s.pong.store(p, std::memory_order_release);
      L::Set(s.latch[0]);
      continue;
    }
    // The run's end (stop() sets this latch too): the pinger's closing -1
    // never comes when it saw the end before this process owned its latch,
    // which a loaded CPU both are pinned to can delay past a short run.
    if (s.phase.load(std::memory_order_relaxed) == kStop) break;
    const uint32_t events = latch->Wait(-1);
    if (events & kWaitFailed) {
      r.Fail(absl::StrCat("wait failed: ", std::strerror(errno)));
      return 1;
    }
    if (events & kPostmasterDeath) return 1;
  }
  RecordCpu(r, cpu);
  return 0;
}

// The busy owner: resets its latch whenever it finds it set, never sleeps.
template <Latch L>
int BusyOwner(BusyShared<L>& s, const RunSpec& spec) {
  ChildReport& r = s.report[0];
  std::optional<LoopCounters> counters;
  std::optional<L> latch = OwnLatch<L>(s.latch, spec, spec.cpu[0], r, counters);
  if (!latch) return 1;
  if (counters) counters->Begin();
  while (s.phase.load(std::memory_order_relaxed) != kStop) {
    if (s.latch.state.is_set.load(std::memory_order_relaxed) != 0) latch->Reset();
    for (int k = 0; k < 64; ++k) CpuRelax();
  }
  if (counters) counters->End(r);
  return 0;
}

// The setter: SetLatch on the busy owner, each time once the owner has
// reset it (a SetLatch of a set latch returns at once and proves nothing).
template <Latch L>
int BusySetter(BusyShared<L>& s, const RunSpec& spec, int64_t sets, int64_t clock_pair_ns) {
  ChildReport& r = s.report[1];
  if (absl::Status st = internal::PinToCpu(spec.cpu[1]); !st.ok()) {
    r.Fail(std::string(st.message()));
    return 1;
  }
  std::optional<LoopCounters> counters;
  if (!spec.count_names.empty()) {
    absl::StatusOr<LoopCounters> c = LoopCounters::Open(spec.count_names);
    if (!c.ok()) {
      r.Fail(std::string(c.status().message()));
      return 1;
    }
    counters = *std::move(c);
  }
  auto done = absl::MakeCleanup([&] { s.phase.store(kStop, std::memory_order_relaxed); });
  auto stopped = [&] { return s.phase.load(std::memory_order_relaxed) == kStop; };
  while (s.latch.state.owner_pid.load(std::memory_order_acquire) == 0) {
    if (stopped()) return 0;
    sched_yield();
  }
  int64_t total_ns = 0;
  for (int64_t k = 0; k < sets; ++k) {
    // Spin for the owner's reset; should the scheduler have put both on one
    // CPU after all, yield it now and then (outside what is counted).
    for (int spins = 0; s.latch.state.is_set.load(std::memory_order_relaxed) != 0; ++spins) {
      if (stopped()) return 0;
      if (spins % 4096 == 4095) sched_yield();
      CpuRelax();
    }
    // Counted: only the calls inside SetLatch, each set on its own.
    if (counters) counters->Begin();
    const int64_t start = NowNs();
    L::Set(s.latch);
    total_ns += NowNs() - start;
    if (counters) counters->End(r, /*accumulate=*/true);
  }
  r.calls = sets;
  r.call_ns = std::max<int64_t>(0, total_ns - clock_pair_ns * sets);
  return 0;
}

// One ping-pong: timed (spec.counted_round_trips == 0) or counted.
template <Latch L>
absl::Status RunPingPong(const RunSpec& base, absl::Duration duration, Histogram* latency_ns, RunFigures& out) {
  absl::StatusOr<SharedArray<PingPongShared<L>>> shared = SharedArray<PingPongShared<L>>::Create(1);
  if (!shared.ok()) return shared.status();
  const bool counting = base.counted_round_trips > 0;
  absl::StatusOr<SharedArray<uint32_t>> log = SharedArray<uint32_t>::Create(counting ? 0 : kMaxLatencies);
  if (!log.ok()) return log.status();
  PingPongShared<L>& s = (*shared)[0];
  for (int i = 0; i < 2; ++i) {
    if (absl::Status st = L::InitShared(s.latch[i]); !st.ok()) return st;
  }
  auto destroy = absl::MakeCleanup([&] {
    for (int i = 0; i < 2; ++i) L::DestroyShared(s.latch[i]);
  });
  absl::StatusOr<PostmasterDeathPipe> death = PostmasterDeathPipe::Create();
  if (!death.ok()) return death.status();
  RunSpec spec = base;
  spec.death_fd = death->watch_fd();
  Children children;
  uint32_t* latencies = counting ? nullptr : log->data();
  for (int who = 0; who < 2; ++who) {
    absl::Status st = children.Start([&] {
      death->CloseOwnEnd();
      return who == 0 ? Pinger<L>(s, spec, latencies) : Ponger<L>(s, spec);
    });
    if (!st.ok()) return st;
  }
  // Ends the run: the children see kStop at their next turn, and a process
  // asleep is woken to see it.
  auto stop = [&] {
    s.phase.store(kStop, std::memory_order_relaxed);
    L::Set(s.latch[0]);
    L::Set(s.latch[1]);
  };
  int64_t measured_ns = 0;
  int64_t timeout_ms = kReapTimeoutMs;
  if (!counting) {
    if (SleepUnlessStopped(kWarmupTime)) {
      s.phase.store(kMeasure, std::memory_order_relaxed);
      const int64_t start = NowNs();
      SleepUnlessStopped(duration);
      measured_ns = NowNs() - start;
    }
    stop();
  } else {
    // A lost wake-up hangs a counting pass: it is killed after a generous
    // 1 ms per round trip, and the run fails naming the process.
    timeout_ms += spec.counted_round_trips + kCountWarmup;
  }
  const absl::Status reaped = children.ReapAll(timeout_ms, "latch ping-pong process", s.report, stop);
  if (StopRequested()) return StoppedStatus();
  if (!reaped.ok()) return reaped;
  if (counting) {
    out.syscalls = SumSyscalls(spec.count_names, s.report, spec.counted_round_trips);
    return absl::OkStatus();
  }
  const ChildReport& pinger = s.report[0];
  const ChildReport& ponger = s.report[1];
  out.round_trips_per_second = pinger.measured_round_trips * 1e9 / static_cast<double>(std::max<int64_t>(measured_ns, 1));
  const double trips = static_cast<double>(std::max<int64_t>(pinger.round_trips, 1));
  out.user_us = (pinger.user_ns + ponger.user_ns) / 1e3 / trips;
  out.sys_us = (pinger.sys_ns + ponger.sys_ns) / 1e3 / trips;
  const int64_t kept = std::min<int64_t>(s.latencies.load(), static_cast<int64_t>(kMaxLatencies));
  for (int64_t k = 0; k < kept; ++k) latency_ns->Record(latencies[k]);
  return absl::OkStatus();
}

template <Latch L>
absl::Status RunBusySet(const RunSpec& base, int64_t sets, int64_t clock_pair_ns, RunFigures& out) {
  absl::StatusOr<SharedArray<BusyShared<L>>> shared = SharedArray<BusyShared<L>>::Create(1);
  if (!shared.ok()) return shared.status();
  BusyShared<L>& s = (*shared)[0];
  if (absl::Status st = L::InitShared(s.latch); !st.ok()) return st;
  auto destroy = absl::MakeCleanup([&] { L::DestroyShared(s.latch); });
  absl::StatusOr<PostmasterDeathPipe> death = PostmasterDeathPipe::Create();
  if (!death.ok()) return death.status();
  RunSpec spec = base;
  spec.death_fd = death->watch_fd();
  Children children;
  for (int who = 0; who < 2; ++who) {
    absl::Status st = children.Start([&] {
      death->CloseOwnEnd();
      return who == 0 ? BusyOwner<L>(s, spec) : BusySetter<L>(s, spec, sets, clock_pair_ns);
    });
    if (!st.ok()) return st;
  }
  // The setter ends the run (phase kStop) when its sets are done, a stop
  // request sooner; a setter that hangs (its owner gone) is killed after a
  // generous 1 ms per set.
  const absl::Status reaped = children.ReapAll(kReapTimeoutMs + sets, "busy-owner process", s.report,
                                               [&] { s.phase.store(kStop, std::memory_order_relaxed); });
  if (StopRequested()) return StoppedStatus();
  if (!reaped.ok()) return reaped;
  if (!spec.count_names.empty()) {
    out.busy_owner_syscalls = SumSyscalls(spec.count_names, std::span(s.report).first(1), sets);
    out.busy_set_syscalls = SumSyscalls(spec.count_names, std::span(s.report).last(1), sets);
    // The timed clock reads are in the counted loop too (vDSO: no call);
    // what Begin/End read is taken out by the counters themselves.
  } else {
    out.busy_set_ns = static_cast<double>(s.report[1].call_ns) / static_cast<double>(std::max<int64_t>(sets, 1));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpus(std::string_view text) {
  if (text == "any") return std::vector<int>{};
  std::vector<int> cpus;
  for (absl::string_view item : absl::StrSplit(std::string(text), ',')) {
    int cpu;
    if (!absl::SimpleAtoi(item, &cpu) || cpu < 0) {
      return absl::InvalidArgumentError(absl::StrCat("`cpus`: '", absl::CEscape(std::string(text)), "' is not 'any', a CPU number or two (e.g. 0,1)"));
    }
    cpus.push_back(cpu);
  }
  return cpus;
}

absl::Status ValidateLatchOptions(const LatchExperimentOptions& o) {
  if (o.latches.empty()) return absl::InvalidArgumentError("no latch to measure");
  std::set<LatchKind> seen;
  for (LatchKind k : o.latches) {
    if (!seen.insert(k).second) return absl::InvalidArgumentError(absl::StrCat("latch '", std::string(LatchName(k)), "' given twice"));
  }
  if (o.rounds < 1 || o.rounds > 1000) return absl::InvalidArgumentError("`rounds` must be 1..1000");
  if (o.duration < absl::Milliseconds(10) || o.duration > absl::Seconds(60)) return absl::InvalidArgumentError("`duration` must be 10ms..60s");
  if (o.counted_round_trips < 100 || o.counted_round_trips > 10'000'000) {
    return absl::InvalidArgumentError("counted round trips must be 100..10^7");
  }
  if (o.busy_sets < 100 || o.busy_sets > 100'000'000) return absl::InvalidArgumentError("busy sets must be 100..10^8");
  if (o.cpus.size() > 2) return absl::InvalidArgumentError("`cpus`: at most two CPUs (one per process)");
  // One CPU named twice would pin a busy owner beside its setter while the
  // run believes they are apart: the busy measurement then never ends.
  if (o.cpus.size() == 2 && o.cpus[0] == o.cpus[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("`cpus`: CPU ", o.cpus[0], " is named twice; for both processes on one CPU, give it once (`cpus`=",
                     o.cpus[0], ")"));
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return absl::OkStatus();
  for (int cpu : o.cpus) {
    if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
      return absl::InvalidArgumentError(
          absl::StrCat("`cpus`: CPU ", cpu, " is not one this process may run on (", CPU_COUNT(&allowed), " allowed)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LatchExperimentResult> RunLatchExperiment(const LatchExperimentOptions& options) {
  if (absl::Status s = ValidateLatchOptions(options); !s.ok()) return s;
  InstallStopHandlers();
  RunSpec timed;
  if (options.cpus.size() == 1) timed.cpu[0] = timed.cpu[1] = options.cpus[0];
  if (options.cpus.size() == 2) {
    timed.cpu[0] = options.cpus[0];
    timed.cpu[1] = options.cpus[1];
  }
  const int64_t clock_pair_ns = internal::ClockPairNs();
  // A busy owner on the setter's own CPU holds it: nothing to measure there.
  const bool busy_measured = options.cpus.size() != 1;
  const size_t n = options.latches.size();
  std::vector<std::vector<RunFigures>> runs(n);
  std::vector<Histogram> latencies(n);
  absl::Status status = RunInterleaved("latch", options.rounds, n, [&](size_t i, int64_t) -> absl::Status {
    RunFigures f;
    absl::Status s = WithLatch(options.latches[i], [&]<Latch L>() {
      absl::Status st = RunPingPong<L>(timed, options.duration, &latencies[i], f);
      if (st.ok() && busy_measured) st = RunBusySet<L>(timed, options.busy_sets, clock_pair_ns, f);
      return st;
    });
    if (s.ok()) runs[i].push_back(std::move(f));
    return s;
  });
  if (!status.ok()) return status;

  LatchExperimentResult result;
  std::vector<std::string> names;
  std::vector<RunFigures> counted(n);
  if (options.count_syscalls) {
    result.syscalls_status = profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls);
    if (result.syscalls_status.ok()) names = internal::AvailableSyscallKinds(kLatchSyscallKinds);
  }
  if (!names.empty()) {
    RunSpec spec = timed;
    spec.count_names = names;
    spec.counted_round_trips = options.counted_round_trips;
    // Held open here for the whole pass, so that each tracepoint stays
    // enabled: a child's open of one nobody else counts enables it anew,
    // which takes milliseconds each (the kernel waits for an RCU grace period).
    const absl::StatusOr<internal::LoopCounters> keep_enabled = internal::LoopCounters::Open(names);
    status = RunInterleaved("latch: counting system calls", 1, n, [&](size_t i, int64_t) -> absl::Status {
      return WithLatch(options.latches[i], [&]<Latch L>() {
        absl::Status st = RunPingPong<L>(spec, absl::ZeroDuration(), nullptr, counted[i]);
        if (st.ok() && busy_measured) {
          st = RunBusySet<L>(spec, std::min<int64_t>(options.busy_sets, 2000), clock_pair_ns, counted[i]);
        }
        return st;
      });
    });
    if (!status.ok()) return status;
  }
  for (size_t i = 0; i < n; ++i) {
    LatchRow row;
    row.latch = options.latches[i];
    for (const RunFigures& f : runs[i]) row.round_trips_per_second_by_round.push_back(f.round_trips_per_second);
    row.round_trips_per_second = Summarize(row.round_trips_per_second_by_round);
    row.vs_baseline = i == 0 ? SelfRatio(static_cast<int>(runs[i].size()))
                             : PairedRatio(row.round_trips_per_second_by_round,
                                           result.rows[0].round_trips_per_second_by_round, Better::kHigher);
    row.round_trip_us = latencies[i].Summarize(1e-3);
    row.user_us = MedianOf(runs[i], [](const RunFigures& f) { return f.user_us; });
    row.sys_us = MedianOf(runs[i], [](const RunFigures& f) { return f.sys_us; });
    if (busy_measured) row.busy_set_ns = MedianOf(runs[i], [](const RunFigures& f) { return f.busy_set_ns; });
    if (!names.empty()) {
      row.syscalls = counted[i].syscalls;
      if (busy_measured) {
        row.busy_set_syscalls = counted[i].busy_set_syscalls;
        row.busy_owner_syscalls = counted[i].busy_owner_syscalls;
      }
    }
    result.rows.push_back(std::move(row));
  }
  return result;
}

}  // namespace backendlab::waits
