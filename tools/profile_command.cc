// `backendlab profile`: where one configuration's backends spend their time,
// as call graphs. The built-in sampler follows every forked backend and tags
// each sample with its phase; with --perf=on the same workload also runs under
// `perf record`, and both are folded, drawn and ranked the same way.
#include "tools/profile_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/compiler.h"
#include "lifecycle/cycle.h"
#include "lifecycle/cycle_summary.h"
#include "profiling/flame_graph.h"
#include "profiling/perf_record.h"
#include "profiling/profile_views.h"
#include "profiling/sampler.h"
#include "profiling/symbolizer.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/machine_header.h"
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
};

std::vector<FlagSpec> AllFlags() {
  std::vector<FlagSpec> all(CycleFlagSpecs().begin(), CycleFlagSpecs().end());
  all.insert(all.end(), std::begin(kProfileFlags), std::end(kProfileFlags));
  return all;
}

// Whether `arg` is one of profile's own flags (--name=value, or an on/off
// flag alone), which `cycle` under perf must not be given.
bool IsProfileFlag(std::string_view arg) {
  for (const FlagSpec& f : kProfileFlags) {
    const std::string flag = absl::StrCat("--", std::string(f.name));
    if (arg == flag || arg.starts_with(flag + "=")) return true;
  }
  return false;
}

// A backend phase (or wait): the tags a backend's samples carry. The
// postmaster's fork() calls carry `fork` too: they are that phase's start.
bool IsPhaseTag(int32_t tag) { return tag >= 0 && tag <= lifecycle::kSampleTagWait; }

// The process a sample comes from, named as perf names it (by comm).
std::string RoleOf(const profiling::RawSample& s, int32_t postmaster_pid) {
  if (s.pid == postmaster_pid) return "postmaster";
  if (s.tag == lifecycle::kSampleTagClient) return "client";  // inproc: the tool itself
  return "backend";
}

absl::Status WriteView(const std::string& dir, const profiling::ProfileView& view, std::vector<std::string>& written) {
  const std::string folded = absl::StrCat(dir, "/", view.name, ".folded");
  if (absl::Status s = WriteTextFile(folded, view.stacks.ToText()); !s.ok()) return s;
  written.push_back(folded);
  const std::string svg = absl::StrCat(dir, "/", view.name, ".svg");
  if (absl::Status s = WriteTextFile(svg, profiling::RenderFlameGraphSvg(view.stacks, {.title = view.title})); !s.ok()) {
    return s;
  }
  written.push_back(svg);
  return absl::OkStatus();
}

std::string Percent(double part, double whole) { return whole > 0 ? absl::StrFormat("%.1f", 100.0 * part / whole) : "-"; }

// Per tag (the phases, then wait): the samples taken, and the time the
// phase counters measured on one clock (CPU time, or wall time, where the
// backends' wait for "terminate" counts too). Reap is the kernel's, after
// _exit: never sampled, left out of both.
struct PhaseTally {
  std::array<int64_t, lifecycle::kSampleTagWait + 1> samples{};
  int64_t tagged = 0;  // samples with a phase or wait tag
  std::array<double, lifecycle::kSampleTagWait + 1> ms{};
  double total_ms = 0;
};

PhaseTally Tally(const lifecycle::CycleResult& result, profiling::SampleClock clock) {
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
  for (lifecycle::Phase p : lifecycle::kAllPhases) {
    if (p == lifecycle::Phase::kReap) continue;
    const lifecycle::PhaseHistograms& h = result.backends.phases[static_cast<int>(p)];
    add(static_cast<int32_t>(p), wall ? h.wall_ns.sum() : h.cpu_ns.sum());
  }
  if (wall) add(lifecycle::kSampleTagWait, result.backends.wait_ns.sum());
  return t;
}

// Per phase: the share of the samples, beside the share of the sampled clock
// the phase counters measured, so that a reader can see whether they agree.
void PrintPhaseShares(std::ostream& out, const PhaseTally& t, profiling::SampleClock clock) {
  const bool wall = clock == profiling::SampleClock::kWall;
  const char* unit = wall ? "wall" : "cpu";
  out << absl::StrFormat("%-14s %9s %10s   %13s %7s\n", "phase", "samples", "% samples", absl::StrCat(unit, " ms (ctr)"),
                         absl::StrCat("% ", unit));
  for (int32_t tag = 0; tag <= lifecycle::kSampleTagWait; ++tag) {
    const bool measured = tag != static_cast<int32_t>(lifecycle::Phase::kReap) && (tag < lifecycle::kNumPhases || wall);
    const size_t i = static_cast<size_t>(tag);
    out << absl::StrFormat("%-14s %9d %10s   %13s %7s\n", lifecycle::SampleTagName(tag), t.samples[i],
                           Percent(static_cast<double>(t.samples[i]), static_cast<double>(t.tagged)),
                           measured ? absl::StrFormat("%.1f", t.ms[i]) : "-", measured ? Percent(t.ms[i], t.total_ms) : "-");
  }
}

// The same workload (`cycle` with the same flags) under perf record, its
// stacks folded like the sampler's. `say` prints as it goes.
absl::StatusOr<profiling::FoldedStacks> RecordUnderPerf(std::span<const std::string> args, const std::string& dir,
                                                        int frequency_hz,
                                                        const std::function<void(const std::string&)>& say) {
  std::array<char, 4096> self{};
  if (readlink("/proc/self/exe", self.data(), self.size() - 1) <= 0) {
    return absl::UnavailableError(absl::StrCat("readlink /proc/self/exe: ", std::strerror(errno)));
  }
  profiling::PerfRecordOptions options{.command = {self.data(), "cycle"},
                                       .data_path = dir + "/perf.data",
                                       .output_path = dir + "/perf-cycle.txt",
                                       .frequency_hz = frequency_hz};
  for (const std::string& a : args) {
    if (!IsProfileFlag(a) && !a.starts_with("--json=") && !a.starts_with("--csv=")) options.command.push_back(a);
  }
  absl::StatusOr<profiling::FoldedStacks> folded =
      profiling::RecordUnderPerf(options, [&](const std::vector<std::string>& argv) {
        if (!kFramePointers) {
          say("note: this binary was not built with frame pointers; perf's call graphs will stop early.\n"
              "      Use the profile preset (tools/backendlab profile does).\n");
        }
        say(absl::StrCat("\nrunning the same workload under perf: ", absl::StrJoin(argv, " "), "\n"));
      });
  if (absl::IsFailedPrecondition(folded.status())) {  // perf missing
    return absl::FailedPreconditionError(
        absl::StrCat("--perf: ", folded.status().message(), "; the built-in profile above stands"));
  }
  return folded;
}

}  // namespace

std::string ProfileUsage() {
  return absl::StrCat(
      "usage: backendlab profile [cycle flags] [profile flags]\n"
      "Runs `cycle` with a sampling profiler that follows every forked backend and tags each\n"
      "sample with the backend's phase; writes folded stacks (all, per phase), SVG flame graphs\n"
      "and a summary, and prints the top functions. --perf=on also runs the workload under\n"
      "perf record and prints both rankings side by side.\n\n",
      FlagsHelp(AllFlags()));
}

absl::Status RunProfileCommand(std::span<const std::string> args, std::ostream& out) {
  const std::vector<FlagSpec> specs = AllFlags();
  absl::StatusOr<Flags> flags = Flags::Parse(args, specs);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<lifecycle::CycleOptions> options = CycleOptionsFromFlags(*flags);
  if (!options.ok()) return options.status();
  profiling::SamplerOptions sampler;
  absl::StatusOr<int64_t> frequency = flags->GetInt("frequency", 1, 100'000);
  if (!frequency.ok()) return frequency.status();
  sampler.frequency_hz = static_cast<int>(*frequency);
  if (flags->Has("clock")) {
    absl::StatusOr<profiling::SampleClock> clock = profiling::ParseSampleClock(flags->Get("clock"));
    if (!clock.ok()) return clock.status();
    sampler.clock = *clock;
  }
  sampler.unwinder = kFramePointers ? profiling::Unwinder::kFramePointers : profiling::Unwinder::kLibunwind;
  if (flags->Has("unwinder") && flags->Get("unwinder") != "auto") {
    absl::StatusOr<profiling::Unwinder> unwinder = profiling::ParseUnwinder(flags->Get("unwinder"));
    if (!unwinder.ok()) return unwinder.status();
    sampler.unwinder = *unwinder;
  }
  absl::StatusOr<int64_t> top_n = flags->GetInt("top", 1, 1000);
  if (!top_n.ok()) return top_n.status();
  absl::StatusOr<bool> perf = flags->GetBool("perf");
  if (!perf.ok()) return perf.status();
  // Found out now, not after the run: an --out that is a file or not
  // writable. It is created only once there is a profile to put in it.
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  const std::string dir = flags->Get("out");  // never empty: the parser refuses empty values
  options->sampler = sampler;
  if (isatty(STDERR_FILENO)) {
    options->progress = [](const std::string& line) { std::fprintf(stderr, "\r%s\033[K", line.c_str()); };
  }

  absl::StatusOr<lifecycle::CycleResult> result = lifecycle::RunCycle(*options);
  if (options->progress) std::fprintf(stderr, "\r\033[K");
  if (!result.ok()) return result.status();
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(dir), ": ", std::strerror(errno)));
  }
  const lifecycle::CycleSummary summary = lifecycle::Summarize(*result);

  // Everything printed also goes to summary.txt.
  std::ostringstream text;
  std::string printed;
  auto flush = [&] {
    out << text.str() << std::flush;
    printed += text.str();
    text.str("");
  };
  text << "backendlab profile: " << ConfigLine(*options) << "\n" << MachineLine(MachineHeader()) << "\n";
  std::set<int32_t> pids;
  for (const profiling::RawSample& s : result->samples) pids.insert(s.pid);
  const PhaseTally on_cpu = Tally(*result, profiling::SampleClock::kCpu);
  const double backend_cpu_s = on_cpu.total_ms / 1e3;
  const int64_t phase_samples = on_cpu.tagged;
  text << absl::StrFormat(
      "sampler: %s clock, %d Hz requested, %s unwinding: %d samples from %d processes, %d dropped (buffer full), "
      "%d stacks cut at %d frames\n",
      profiling::SampleClockName(sampler.clock), sampler.frequency_hz, profiling::UnwinderName(sampler.unwinder),
      result->samples.size(), pids.size(), result->samples_dropped, result->samples_truncated, profiling::kMaxFrames);
  if (backend_cpu_s > 0) {
    text << absl::StrFormat("         %.0f samples per second of the backends' CPU time (phase counters: %.2f s)%s\n",
                            static_cast<double>(phase_samples) / backend_cpu_s, backend_cpu_s,
                            sampler.clock == profiling::SampleClock::kCpu
                                ? "; CPU-time timers fire at most once per kernel tick (CONFIG_HZ)"
                                : "");
  }
  if (!result->samples_status.ok()) text << "samples incomplete: " << result->samples_status.message() << "\n";
  text << absl::StrFormat("connections/s while sampled: %.1f (%d measured backends)\n\n", summary.connections_per_second,
                          result->connections);

  profiling::Symbolizer symbolizer;
  const int32_t postmaster = result->postmaster_pid;
  profiling::SampleLabels labels;
  labels.process = [postmaster](const profiling::RawSample& s) { return RoleOf(s, postmaster); };
  labels.phase = [](int32_t tag) { return IsPhaseTag(tag) ? std::string(lifecycle::SampleTagName(tag)) : std::string(); };
  for (int32_t tag = 0; tag <= lifecycle::kSampleTagWait; ++tag) labels.phase_tags.push_back(tag);
  const profiling::ProfileViews views = profiling::FoldViews(result->samples, symbolizer, labels);
  const profiling::FoldedStacks& backends = views.measured;
  std::vector<std::string> written;
  for (const profiling::ProfileView& view : views.views) {
    if (absl::Status s = WriteView(dir, view, written); !s.ok()) return s;
  }

  PhaseReport(summary, options->backend.counters).PrintText(text);
  for (const absl::Status& why : result->counters_unavailable) text << why.message() << "\n";
  text << "\n";
  text << "samples by phase, beside the time each phase's counters measured on the sampled clock (fork includes the\n"
          "postmaster's fork(); reap, the kernel's teardown after _exit, is invisible to a user-space sampler):\n";
  PrintPhaseShares(text, sampler.clock == profiling::SampleClock::kCpu ? on_cpu : Tally(*result, sampler.clock),
                   sampler.clock);
  const std::vector<profiling::FunctionSamples> top = backends.TopN(static_cast<size_t>(*top_n));
  text << absl::StrFormat("\ntop %d functions of the backends, built-in sampler (%d samples; self: the leaf frame, "
                          "total: anywhere on the stack):\n",
                          *top_n, backends.total_samples());
  profiling::PrintTopN(text, top);
  if (backends.total_samples() == 0) {
    text << "(no backend samples: the backends ran for less CPU time than one sampling period; raise --connections"
            " or --frequency)\n";
  }

  absl::Status perf_status = absl::OkStatus();
  if (*perf && result->interrupted) {
    text << "\n--perf: not run (interrupted)\n";
  } else if (*perf) {
    flush();
    absl::StatusOr<profiling::FoldedStacks> recorded = RecordUnderPerf(args, dir, sampler.frequency_hz, [&](const std::string& line) {
      text << line;
      flush();
    });
    if (recorded.ok()) {
      if (absl::Status s = WriteView(dir, {"perf", "perf record -e cpu-clock --call-graph=fp", *recorded}, written); !s.ok()) {
        return s;
      }
      const profiling::FoldedStacks perf_backends = recorded->Under("backend");
      const std::vector<profiling::FunctionSamples> perf_top = perf_backends.TopN(static_cast<size_t>(*top_n));
      text << absl::StrFormat("\ntop %d functions of the backends, perf (%d samples, kernel frames folded into their "
                              "user-space caller):\n",
                              *top_n, perf_backends.total_samples());
      profiling::PrintTopN(text, perf_top);
      text << absl::StrFormat("\nagreement: %d of the top 5 functions by self samples are the same in both (perf may also\n"
                              "name functions of system libraries from their separate debug files; the sampler cannot)\n",
                              profiling::CommonTop(top, perf_top, 5));
    } else {
      perf_status = recorded.status();
      text << "perf: " << perf_status.message() << "\n";
    }
  }

  text << "\nfiles:\n";
  for (const std::string& f : written) text << "  " << f << "\n";
  flush();
  if (absl::Status s = WriteTextFile(dir + "/summary.txt", printed); !s.ok()) return s;
  if (flags->Has("json") || flags->Has("csv")) {
    nlohmann::json header = MachineHeader();
    header["command"] = "profile";
    header["config"] = ConfigJson(*options);
    header["summary"] = SummaryJson(summary, *result);
    header["sampler"] = {{"clock", profiling::SampleClockName(sampler.clock)},
                         {"frequency_hz", sampler.frequency_hz},
                         {"unwinder", profiling::UnwinderName(sampler.unwinder)},
                         {"samples", result->samples.size()},
                         {"dropped", result->samples_dropped},
                         {"truncated", result->samples_truncated}};
    nlohmann::json top_json = nlohmann::json::array();
    for (const profiling::FunctionSamples& f : top) {
      top_json.push_back({{"function", f.name}, {"self", f.self}, {"total", f.total},
                          {"self_percent", f.self_percent}, {"total_percent", f.total_percent}});
    }
    header["top"] = top_json;
    Report report = PhaseReport(summary, options->backend.counters);
    report.SetHeader(header);
    if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
  }
  if (absl::Status s = RunOutcome(*result, summary); !s.ok()) return s;
  if (!result->samples_status.ok()) return result->samples_status;
  return perf_status;
}

}  // namespace backendlab::tools
