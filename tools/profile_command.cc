// `backendlab profile`: where one configuration's backends spend their time,
// as call graphs. The built-in sampler follows every forked backend and tags
// each sample with its phase; with --perf=on the same workload also runs under
// `perf record`, and both are folded, drawn and ranked the same way.
#include "tools/profile_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
#include "base/runtime_files.h"
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
#include "tools/profile_flags.h"
#include "tools/profile_report.h"
#include "tools/report.h"
#include "tools/progress.h"

namespace backendlab::tools {
namespace {

// The same workload (`cycle` with the same flags) under perf record, its
// stacks folded like the sampler's. `say` prints as it goes.
absl::StatusOr<profiling::FoldedStacks> RecordUnderPerf(std::span<const std::string> args, const std::string& dir,
                                                        int frequency_hz,
                                                        const std::function<void(const std::string&)>& say) {
  absl::StatusOr<std::string> self = ThisExecutable();
  if (!self.ok()) return self.status();
  profiling::PerfRecordOptions options{.command = {*self, "cycle"},
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
      FlagsHelp(ProfileFlags()));
}

namespace {

// The run's views as files (its baseline's under baseline/), and the diff
// against the baseline; `figures` gets the page's flame graphs.
absl::Status WriteProfileFiles(const ProfileRequest& request, const lifecycle::ProfileRun& run,
                               const std::optional<lifecycle::ProfileRun>& base_run,
                               std::optional<profiling::FoldedDiff>& diff, std::vector<std::string>& written,
                               std::vector<HtmlPage::Figure>& figures) {
  const std::string& dir = request.dir;
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(dir), ": ", std::strerror(errno)));
  }
  for (const profiling::ProfileView& view : run.views.views) {
    std::string svg;
    const bool shown = request.html && (view.name == "all" || view.name == "phases");
    if (absl::Status s = WriteView(dir, view, written, shown ? &svg : nullptr); !s.ok()) return s;
    if (shown) figures.push_back({view.title, std::move(svg)});
  }
  if (!base_run || run.cycle.interrupted) return absl::OkStatus();
  const std::string base_dir = dir + "/baseline";
  if (mkdir(base_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(base_dir), ": ", std::strerror(errno)));
  }
  for (const profiling::ProfileView& view : base_run->views.views) {
    if (absl::Status s = WriteView(base_dir, view, written); !s.ok()) return s;
  }
  const std::string base_name = absl::StrJoin(*request.baseline, "/");
  const std::string name = ConfigurationName(request.options);
  diff = lifecycle::ProfileDiff(*base_run, base_name, run, name, *request.options.sampler);
  const std::string title = absl::StrCat(name, " against ", base_name);
  std::string svg;
  if (absl::Status s = WriteDiff(dir, "diff", title, *diff, written, request.html ? &svg : nullptr); !s.ok()) return s;
  if (request.html) figures.push_back({absl::StrCat("differential flame graph: ", title), std::move(svg)});
  return absl::OkStatus();
}

// The traced backends' phases on a timeline, in connection order.
std::vector<profiling::TraceSpan> SpansOf(std::vector<lifecycle::BackendRecord>& traced) {
  std::sort(traced.begin(), traced.end(), [](const lifecycle::BackendRecord& x, const lifecycle::BackendRecord& y) {
    return x.sequence < y.sequence;
  });
  std::vector<profiling::TraceSpan> spans;
  for (const lifecycle::BackendRecord& r : traced) {
    for (profiling::TraceSpan& span : lifecycle::SpansOf(r)) spans.push_back(std::move(span));
  }
  return spans;
}

}  // namespace

absl::Status RunProfileCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, ProfileFlags());
  if (!flags.ok()) return flags.status();
  absl::StatusOr<ProfileRequest> request = ProfileFromFlags(*flags);
  if (!request.ok()) return request.status();
  lifecycle::CycleOptions& options = request->options;
  ProgressLine progress;  // erased on every path out
  options.progress = progress.Callback();

  // The baseline first, with the same flags but its configuration.
  std::optional<lifecycle::ProfileRun> base_run;
  if (request->baseline) {
    absl::StatusOr<lifecycle::ProfileRun> r = lifecycle::RunProfile(WithConfiguration(options, *request->baseline));
    if (!r.ok()) return r.status();
    if (r->cycle.interrupted) return StoppedStatus();  // cut short: nothing to set against
    base_run = *std::move(r);
  }
  // The trace's backends: the first --trace-connections measured ones'
  // records, kept as they arrive (in the order they are reaped).
  std::vector<lifecycle::BackendRecord> traced;
  if (!request->exports.trace.empty() || request->html) {
    const int64_t first = options.hold + options.warmup, k = request->exports.trace_connections;
    options.on_record = [&traced, first, k](const lifecycle::BackendRecord& r) {
      if (r.sequence - first < k) traced.push_back(r);
    };
  }
  absl::StatusOr<lifecycle::ProfileRun> run = lifecycle::RunProfile(options);
  progress.Clear();
  if (!run.ok()) return run.status();
  std::vector<std::string> written;
  std::vector<HtmlPage::Figure> figures;
  std::optional<profiling::FoldedDiff> diff;
  if (absl::Status s = WriteProfileFiles(*request, *run, base_run, diff, written, figures); !s.ok()) return s;

  // Everything printed also goes to summary.txt.
  std::ostringstream text;
  std::string printed;
  auto flush = [&] {
    out << text.str() << std::flush;
    printed += text.str();
    text.str("");
  };
  const std::vector<profiling::FunctionSamples> top = run->views.measured.TopN(static_cast<size_t>(request->top_n));
  PrintProfile(text, options, *run, request->top_n, top);

  absl::Status perf_status = absl::OkStatus();
  if (request->perf && run->cycle.interrupted) {
    text << "\n--perf: not run (interrupted)\n";
  } else if (request->perf) {
    flush();
    absl::StatusOr<profiling::FoldedStacks> recorded =
        RecordUnderPerf(args, request->dir, options.sampler->frequency_hz, [&](const std::string& line) {
          text << line;
          flush();
        });
    if (recorded.ok()) {
      if (absl::Status s = WriteView(request->dir, {"perf", "perf record -e cpu-clock --call-graph=fp", *recorded}, written);
          !s.ok()) {
        return s;
      }
      PrintPerfProfile(text, recorded->Under("backend"), request->top_n, top);
    } else {
      perf_status = recorded.status();
      text << "perf: " << perf_status.message() << "\n";
    }
  }

  std::vector<profiling::TraceSpan> spans = SpansOf(traced);
  if (request->exports.any() && !run->cycle.interrupted) {
    const profiling::ExportInput input{
        .title = ConfigLine(options),
        .sources = {{ConfigurationName(options), &run->views.labeled, 1'000'000'000LL / options.sampler->frequency_hz}},
        .role = ProcessRole};
    if (absl::Status s = WriteExports(request->exports, input, spans, written); !s.ok()) return s;
    if (run->views.labeled.total_samples() == 0) text << "\nexports: no sample was taken; the files hold none\n";
  }
  if (diff) {
    text << "\nagainst the baseline (--baseline, profiled first with the same flags; one run each: no interval):\n";
    PrintDiffTop(*diff, text);
  }
  text << "\nfiles:\n";
  for (const std::string& f : written) text << "  " << f << "\n";
  flush();
  if (absl::Status s = WriteTextFile(request->dir + "/summary.txt", printed); !s.ok()) return s;
  if (flags->Has("json") || flags->Has("csv") || request->html) {
    Report report = PhaseReport(run->summary, options.backend.counters);
    nlohmann::json header = ProfileHeader(options, *run, top);
    if (diff) header["diff"] = DiffJson(*diff);
    report.SetHeader(header);
    if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
    if (request->html) {
      out << "page: " << flags->Get("html") << "\n";
      HtmlPage page = PageOf(absl::StrCat("backendlab profile: ", ConfigurationName(options)), header, report, printed);
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
