// `backendlab profile`: where one configuration's backends spend their time,
// as call graphs. The built-in sampler follows every forked backend and tags
// each sample with its phase; with --perf=on the same workload also runs under
// `perf record`, and both are folded, drawn and ranked the same way.
#include "tools/profile_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/compiler.h"
#include "lifecycle/cycle.h"
#include "lifecycle/profile_run.h"
#include "profiling/perf_record.h"
#include "profiling/sampler.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/cycle_report.h"
#include "tools/profile_report.h"
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
  // perf records cpu-clock: beside a wall-clock profile its ranking, and the
  // agreement printed between them, would compare two different clocks.
  if (*perf && sampler.clock == profiling::SampleClock::kWall) {
    return absl::InvalidArgumentError(
        "--perf records CPU time (cpu-clock): with --clock=wall the two rankings would be of different clocks; "
        "use --clock=cpu to compare them");
  }
  // Found out now, not after the run: an --out that is a file or not
  // writable. It is created only once there is a profile to put in it.
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  const std::string dir = flags->Get("out");  // never empty: the parser refuses empty values
  options->sampler = sampler;
  if (isatty(STDERR_FILENO)) {
    options->progress = [](const std::string& line) { std::fprintf(stderr, "\r%s\033[K", line.c_str()); };
  }

  absl::StatusOr<lifecycle::ProfileRun> run = lifecycle::RunProfile(*options);
  if (options->progress) std::fprintf(stderr, "\r\033[K");
  if (!run.ok()) return run.status();
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(dir), ": ", std::strerror(errno)));
  }
  std::vector<std::string> written;
  for (const profiling::ProfileView& view : run->views.views) {
    if (absl::Status s = WriteView(dir, view, written); !s.ok()) return s;
  }

  // Everything printed also goes to summary.txt.
  std::ostringstream text;
  std::string printed;
  auto flush = [&] {
    out << text.str() << std::flush;
    printed += text.str();
    text.str("");
  };
  const std::vector<profiling::FunctionSamples> top = run->views.measured.TopN(static_cast<size_t>(*top_n));
  PrintProfile(text, *options, *run, *top_n, top);

  absl::Status perf_status = absl::OkStatus();
  if (*perf && run->cycle.interrupted) {
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
      PrintPerfProfile(text, recorded->Under("backend"), *top_n, top);
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
    Report report = PhaseReport(run->summary, options->backend.counters);
    report.SetHeader(ProfileHeader(*options, *run, top));
    if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
  }
  if (absl::Status s = lifecycle::RunOutcome(run->cycle, run->summary); !s.ok()) return s;
  if (!run->cycle.samples_status.ok()) return run->cycle.samples_status;
  return perf_status;
}

}  // namespace backendlab::tools
