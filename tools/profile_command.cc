// `backendlab profile`: where one configuration's backends spend their time,
// as call graphs. The built-in sampler follows every forked backend and tags
// each sample with its phase; with --perf=on the same workload also runs under
// `perf record`, and both are folded, drawn and ranked the same way.
#include "tools/profile_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/compiler.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "buffers/exit_check.h"
#include "buffers/refcount_table.h"
#include "lifecycle/cycle.h"
#include "lifecycle/profile_run.h"
#include "profiling/perf_record.h"
#include "profiling/sampler.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/cycle_report.h"
#include "tools/diff_report.h"
#include "tools/exports_report.h"
#include "tools/html_report.h"
#include "tools/machine_header.h"
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
    {"baseline", "", "layout/exit-check[/catcache[/syscache]]: also profile that configuration, same flags, first; write and print this one's diff against it"},
    {"html", "", "also write one self-contained HTML page: the phase table, the flame graphs (the diff too), the phase timeline"},
};

std::vector<FlagSpec> AllFlags() {
  std::vector<FlagSpec> all(CycleFlagSpecs().begin(), CycleFlagSpecs().end());
  all.insert(all.end(), std::begin(kProfileFlags), std::end(kProfileFlags));
  all.insert(all.end(), ExportFlagSpecs().begin(), ExportFlagSpecs().end());
  return all;
}

// Whether `arg` is one of profile's own flags (--name=value, or an on/off
// flag alone), which `cycle` under perf must not be given.
bool IsProfileFlag(std::string_view arg) {
  std::vector<FlagSpec> own(std::begin(kProfileFlags), std::end(kProfileFlags));
  own.insert(own.end(), ExportFlagSpecs().begin(), ExportFlagSpecs().end());
  for (const FlagSpec& f : own) {
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

// "hash/assert": the configuration's name as compare's rows have it.
std::string ConfigurationName(const lifecycle::CycleOptions& o) {
  return absl::StrCat(std::string(buffers::LayoutName(o.backend.layout)), "/",
                      std::string(buffers::ExitCheckPolicyName(o.backend.exit_check)));
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
  absl::StatusOr<ExportRequest> exports = ExportRequestFromFlags(*flags);
  if (!exports.ok()) return exports.status();
  std::optional<std::vector<std::string>> baseline;
  if (flags->Has("baseline")) {
    absl::StatusOr<std::vector<std::string>> names = ParseBaseline(flags->Get("baseline"));
    if (!names.ok()) return names.status();
    baseline = *names;
  }
  // Found out now, not after the run: an --out that is a file or not
  // writable. It is created only once there is a profile to put in it.
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  const std::string dir = flags->Get("out");  // never empty: the parser refuses empty values
  options->sampler = sampler;
  if (isatty(STDERR_FILENO)) {
    options->progress = [](const std::string& line) { std::fprintf(stderr, "\r%s\033[K", line.c_str()); };
  }

  // The baseline first, with the same flags but its configuration.
  std::optional<lifecycle::ProfileRun> base_run;
  if (baseline) {
    absl::StatusOr<lifecycle::ProfileRun> r = lifecycle::RunProfile(WithConfiguration(*options, *baseline));
    if (!r.ok()) {
      if (options->progress) std::fprintf(stderr, "\r\033[K");
      return r.status();
    }
    base_run = *std::move(r);
  }
  if (base_run && base_run->cycle.interrupted) {
    if (options->progress) std::fprintf(stderr, "\r\033[K");
    return StoppedStatus();  // the baseline's run was cut short: nothing to set against
  }
  // The trace's backends: the first --trace-connections measured ones'
  // records, kept as they arrive (in the order they are reaped).
  std::vector<lifecycle::BackendRecord> traced;
  const bool html = flags->Has("html");
  if (!exports->trace.empty() || html) {
    const int64_t first = options->hold + options->warmup, k = exports->trace_connections;
    options->on_record = [&traced, first, k](const lifecycle::BackendRecord& r) {
      if (r.sequence - first < k) traced.push_back(r);
    };
  }
  absl::StatusOr<lifecycle::ProfileRun> run = lifecycle::RunProfile(*options);
  if (options->progress) std::fprintf(stderr, "\r\033[K");
  if (!run.ok()) return run.status();
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(dir), ": ", std::strerror(errno)));
  }
  std::vector<std::string> written;
  std::vector<HtmlPage::Figure> figures;
  for (const profiling::ProfileView& view : run->views.views) {
    std::string svg;
    const bool shown = html && (view.name == "all" || view.name == "phases");
    if (absl::Status s = WriteView(dir, view, written, shown ? &svg : nullptr); !s.ok()) return s;
    if (shown) figures.push_back({view.title, std::move(svg)});
  }
  std::optional<profiling::FoldedDiff> diff;
  if (base_run && !run->cycle.interrupted) {
    const std::string base_dir = dir + "/baseline";
    if (mkdir(base_dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(base_dir), ": ", std::strerror(errno)));
    }
    for (const profiling::ProfileView& view : base_run->views.views) {
      if (absl::Status s = WriteView(base_dir, view, written); !s.ok()) return s;
    }
    diff = lifecycle::ProfileDiff(*base_run, absl::StrJoin(*baseline, "/"), *run, ConfigurationName(*options), sampler);
    const std::string title = absl::StrCat(ConfigurationName(*options), " against ", absl::StrJoin(*baseline, "/"));
    std::string svg;
    if (absl::Status s = WriteDiff(dir, "diff", title, *diff, written, html ? &svg : nullptr); !s.ok()) return s;
    if (html) figures.push_back({absl::StrCat("differential flame graph: ", title), std::move(svg)});
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

  std::vector<profiling::TraceSpan> spans;
  std::sort(traced.begin(), traced.end(), [](const lifecycle::BackendRecord& x, const lifecycle::BackendRecord& y) {
    return x.sequence < y.sequence;
  });
  for (const lifecycle::BackendRecord& r : traced) {
    for (profiling::TraceSpan& span : lifecycle::SpansOf(r)) spans.push_back(std::move(span));
  }
  if (exports->any() && !run->cycle.interrupted) {
    const profiling::ExportInput input{
        .title = ConfigLine(*options),
        .sources = {{ConfigurationName(*options), &run->views.labeled, 1'000'000'000LL / sampler.frequency_hz}},
        .role = ProcessRole};
    if (absl::Status s = WriteExports(*exports, input, spans, written); !s.ok()) return s;
    if (run->views.labeled.total_samples() == 0) text << "\nexports: no sample was taken; the files hold none\n";
  }
  if (diff) {
    text << "\nagainst the baseline (--baseline, profiled first with the same flags; one run each: no interval):\n";
    PrintDiffTop(*diff, text);
  }
  text << "\nfiles:\n";
  for (const std::string& f : written) text << "  " << f << "\n";
  flush();
  if (absl::Status s = WriteTextFile(dir + "/summary.txt", printed); !s.ok()) return s;
  if (flags->Has("json") || flags->Has("csv") || html) {
    Report report = PhaseReport(run->summary, options->backend.counters);
    nlohmann::json header = ProfileHeader(*options, *run, top);
    if (diff) header["diff"] = DiffJson(*diff);
    report.SetHeader(header);
    if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
    if (html) {
      out << "page: " << flags->Get("html") << "\n";
      HtmlPage page = PageOf(absl::StrCat("backendlab profile: ", ConfigurationName(*options)), header, report, printed);
      page.chart_key = "cpu_us";
      page.chart_title = "CPU us per backend, by phase (the phase counters)";
      page.figures = std::move(figures);
      page.timeline = std::move(spans);
      if (absl::Status s = WriteHtml(flags->Get("html"), page); !s.ok()) return s;
    }
  }
  if (absl::Status s = lifecycle::RunOutcome(run->cycle, run->summary); !s.ok()) return s;
  if (!run->cycle.samples_status.ok()) return run->cycle.samples_status;
  return perf_status;
}

}  // namespace backendlab::tools
