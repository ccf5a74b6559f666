// A profiled cycle and the figures `backendlab profile` prints from it.
#include "lifecycle/profile_run.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>

#include "base/check.h"
#include "profiling/symbolizer.h"

namespace backendlab::lifecycle {
namespace {

// A backend phase (or wait): the tags a backend's samples carry. The
// postmaster's fork() calls carry `fork` too: they are that phase's start.
bool IsPhaseTag(int32_t tag) { return tag >= 0 && tag <= kSampleTagWait; }

// The process a sample comes from, named as perf names it (by comm).
std::string RoleOf(const profiling::RawSample& s, int32_t postmaster_pid) {
  if (s.pid == postmaster_pid) return "postmaster";
  if (s.tag == kSampleTagClient) return "client";  // inproc: the tool itself
  return "backend";
}

// Per tag (the phases, then wait): the samples taken, and the time the phase
// counters measured on one clock.
struct PhaseTally {
  std::array<int64_t, kSampleTagWait + 1> samples{};
  int64_t tagged = 0;  // samples with a phase or wait tag
  std::array<double, kSampleTagWait + 1> ms{};
  double total_ms = 0;
};

PhaseTally Tally(const CycleResult& result, profiling::SampleClock clock) {
  const bool wall = clock == profiling::SampleClock::kWall;
  PhaseTally t;
  for (const profiling::RawSample& s : result.samples) {
    if (!IsPhaseTag(s.tag)) continue;
    ++t.samples[static_cast<size_t>(s.tag)];
    ++t.tagged;
  }
  auto add = [&](int32_t tag, int64_t ns) {
    t.ms[static_cast<size_t>(tag)] += static_cast<double>(ns) / 1e6;
    t.total_ms += static_cast<double>(ns) / 1e6;
  };
  for (Phase p : kAllPhases) {
    if (p == Phase::kReap) continue;
    const PhaseHistograms& h = result.backends.phases[static_cast<int>(p)];
    add(static_cast<int32_t>(p), wall ? h.wall_ns.sum() : h.cpu_ns.sum());
  }
  if (wall) add(kSampleTagWait, result.backends.wait_ns.sum());
  return t;
}

std::optional<double> Percent(double part, double whole) {
  if (whole > 0) return 100.0 * part / whole;
  return std::nullopt;
}

std::vector<PhaseShare> Shares(const PhaseTally& t, profiling::SampleClock clock) {
  const bool wall = clock == profiling::SampleClock::kWall;
  std::vector<PhaseShare> shares;
  for (int32_t tag = 0; tag <= kSampleTagWait; ++tag) {
    const bool measured = tag != static_cast<int32_t>(Phase::kReap) && (tag < kNumPhases || wall);
    const size_t i = static_cast<size_t>(tag);
    PhaseShare share;
    share.tag = tag;
    share.samples = t.samples[i];
    share.samples_percent = Percent(static_cast<double>(t.samples[i]), static_cast<double>(t.tagged));
    if (measured) {
      share.counter_ms = t.ms[i];
      share.counter_percent = Percent(t.ms[i], t.total_ms);
    }
    shares.push_back(share);
  }
  return shares;
}

}  // namespace

absl::StatusOr<ProfileRun> RunProfile(const CycleOptions& options) {
  BACKENDLAB_CHECK(options.sampler.has_value());
  absl::StatusOr<CycleResult> cycle = RunCycle(options);
  if (!cycle.ok()) return cycle.status();
  ProfileRun run;
  run.cycle = *std::move(cycle);
  run.summary = Summarize(run.cycle);

  std::set<int32_t> pids;
  for (const profiling::RawSample& s : run.cycle.samples) pids.insert(s.pid);
  run.processes = static_cast<int64_t>(pids.size());
  const PhaseTally on_cpu = Tally(run.cycle, profiling::SampleClock::kCpu);
  run.phase_samples = on_cpu.tagged;
  run.backend_cpu_seconds = on_cpu.total_ms / 1e3;
  if (run.backend_cpu_seconds > 0) {
    run.samples_per_cpu_second = static_cast<double>(run.phase_samples) / run.backend_cpu_seconds;
  }
  const profiling::SampleClock clock = options.sampler->clock;
  run.phases = Shares(clock == profiling::SampleClock::kCpu ? on_cpu : Tally(run.cycle, clock), clock);

  profiling::Symbolizer symbolizer;
  const int32_t postmaster = run.cycle.postmaster_pid;
  profiling::SampleLabels labels;
  labels.process = [postmaster](const profiling::RawSample& s) { return RoleOf(s, postmaster); };
  labels.phase = [](int32_t tag) { return IsPhaseTag(tag) ? SampleTagName(tag) : std::string(); };
  for (int32_t tag = 0; tag <= kSampleTagWait; ++tag) labels.phase_tags.push_back(tag);
  run.views = profiling::FoldViews(run.cycle.samples, symbolizer, labels);
  return run;
}

profiling::FoldedDiff ProfileDiff(const ProfileRun& base, std::string base_name, const ProfileRun& run,
                                  std::string name, const profiling::SamplerOptions& sampler) {
  auto all = [](const ProfileRun& r) -> const profiling::FoldedStacks& {
    static const profiling::FoldedStacks kNone;
    for (const profiling::ProfileView& v : r.views.views) {
      if (v.name == "all") return v.stacks;
    }
    return kNone;  // no sample at all
  };
  auto per_sample = [&](const ProfileRun& r) {
    return 1e6 / sampler.frequency_hz / static_cast<double>(std::max<int64_t>(r.cycle.connections, 1));
  };
  return profiling::FoldedDiff::Of(
      {&all(base), per_sample(base), std::move(base_name)}, {&all(run), per_sample(run), std::move(name)},
      sampler.clock == profiling::SampleClock::kCpu ? "us of CPU per connection" : "us of wall time per connection");
}

}  // namespace backendlab::lifecycle
