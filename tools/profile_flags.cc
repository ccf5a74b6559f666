// `backendlab profile`'s flags -> its request.
#include "tools/profile_flags.h"

#include "absl/strings/str_cat.h"
#include "base/compiler.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kProfileFlags[] = {
    {"frequency", "1000", "samples per second of the sampled clock, 1..100000"},
    {"clock", "cpu", "cpu: CPU time (where CPU goes); wall: wall-clock time, blocked time included"},
    {"unwinder", "auto", "fp (frame pointers: cheap; the profile preset), libunwind (DWARF: any build, slower), or auto: fp in a frame-pointer build"},
    {"out", "backendlab-profile", "directory for the folded stacks, flame graphs and summary (created)"},
    {"top", "15", "functions in the top-N tables"},
    {"perf", "off", "on (or --perf alone): also run the workload under perf record -e cpu-clock --call-graph=fp, side by side"},
    {"baseline", "", "layout/exit-check[/catcache[/syscache]]: also profile that configuration, same flags, first; write and print this one's diff against it"},
    {"html", "", "also write one self-contained HTML page: the phase table, the flame graphs (the diff too), the phase timeline"},
};

}  // namespace

std::vector<FlagSpec> ProfileFlags() {
  std::vector<FlagSpec> all(CycleFlagSpecs().begin(), CycleFlagSpecs().end());
  all.insert(all.end(), std::begin(kProfileFlags), std::end(kProfileFlags));
  all.insert(all.end(), ExportFlagSpecs().begin(), ExportFlagSpecs().end());
  return all;
}

bool IsProfileFlag(std::string_view arg) {
  std::vector<FlagSpec> own(std::begin(kProfileFlags), std::end(kProfileFlags));
  own.insert(own.end(), ExportFlagSpecs().begin(), ExportFlagSpecs().end());
  for (const FlagSpec& f : own) {
    const std::string flag = absl::StrCat("--", std::string(f.name));
    if (arg == flag || arg.starts_with(flag + "=")) return true;
  }
  return false;
}

absl::StatusOr<ProfileRequest> ProfileFromFlags(const Flags& flags) {
  absl::StatusOr<lifecycle::CycleOptions> options = CycleOptionsFromFlags(flags);
  if (!options.ok()) return options.status();
  profiling::SamplerOptions sampler;
  absl::StatusOr<int64_t> frequency = flags.GetInt("frequency", 1, 100'000);
  if (!frequency.ok()) return frequency.status();
  sampler.frequency_hz = static_cast<int>(*frequency);
  if (flags.Has("clock")) {
    absl::StatusOr<profiling::SampleClock> clock = profiling::ParseSampleClock(flags.Get("clock"));
    if (!clock.ok()) return clock.status();
    sampler.clock = *clock;
  }
  sampler.unwinder = kFramePointers ? profiling::Unwinder::kFramePointers : profiling::Unwinder::kLibunwind;
  if (flags.Has("unwinder") && flags.Get("unwinder") != "auto") {
    absl::StatusOr<profiling::Unwinder> unwinder = profiling::ParseUnwinder(flags.Get("unwinder"));
    if (!unwinder.ok()) return unwinder.status();
    sampler.unwinder = *unwinder;
  }
  absl::StatusOr<int64_t> top_n = flags.GetInt("top", 1, 1000);
  if (!top_n.ok()) return top_n.status();
  absl::StatusOr<bool> perf = flags.GetBool("perf");
  if (!perf.ok()) return perf.status();
  // perf records cpu-clock: beside a wall-clock profile its ranking, and the
  // agreement printed between them, would compare two different clocks.
  if (*perf && sampler.clock == profiling::SampleClock::kWall) {
    return absl::InvalidArgumentError(
        "--perf records CPU time (cpu-clock): with --clock=wall the two rankings would be of different clocks; "
        "use --clock=cpu to compare them");
  }
  absl::StatusOr<ExportRequest> exports = ExportRequestFromFlags(flags);
  if (!exports.ok()) return exports.status();
  std::optional<std::vector<std::string>> baseline;
  if (flags.Has("baseline")) {
    absl::StatusOr<std::vector<std::string>> names = ParseBaseline(flags.Get("baseline"));
    if (!names.ok()) return names.status();
    baseline = *names;
  }
  // Found out now, not after the run: an --out that is a file or not
  // writable. It is created only once there is a profile to put in it.
  if (absl::Status s = CheckOutputPaths(flags); !s.ok()) return s;
  ProfileRequest request;
  options->sampler = sampler;
  request.options = *std::move(options);
  request.top_n = *top_n;
  request.perf = *perf;
  request.exports = *std::move(exports);
  request.baseline = std::move(baseline);
  request.dir = flags.Get("out");  // never empty: the parser refuses empty values
  request.html = flags.Has("html");
  return request;
}

}  // namespace backendlab::tools
