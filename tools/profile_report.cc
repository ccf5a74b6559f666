// `backendlab profile`'s text, flame graph files and JSON header.
#include "tools/profile_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "profiling/flame_graph.h"
#include "profiling/sampler.h"
#include "tools/cycle_report.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

std::string PercentText(const std::optional<double>& percent) {
  return percent ? absl::StrFormat("%.1f", *percent) : "-";
}

// Per phase: the share of the samples, beside the share of the sampled clock
// the phase counters measured.
void PrintPhaseShares(std::ostream& out, const std::vector<lifecycle::PhaseShare>& phases,
                      profiling::SampleClock clock) {
  const char* unit = clock == profiling::SampleClock::kWall ? "wall" : "cpu";
  out << absl::StrFormat("%-14s %9s %10s   %13s %7s\n", "phase", "samples", "% samples", absl::StrCat(unit, " ms (ctr)"),
                         absl::StrCat("% ", unit));
  for (const lifecycle::PhaseShare& p : phases) {
    out << absl::StrFormat("%-14s %9d %10s   %13s %7s\n", lifecycle::SampleTagName(p.tag), p.samples,
                           PercentText(p.samples_percent), p.counter_ms ? absl::StrFormat("%.1f", *p.counter_ms) : "-",
                           p.counter_ms ? PercentText(p.counter_percent) : "-");
  }
}

}  // namespace

void PrintProfile(std::ostream& out, const lifecycle::CycleOptions& options, const lifecycle::ProfileRun& run,
                  int64_t top_n, const std::vector<profiling::FunctionSamples>& top) {
  const profiling::SamplerOptions& sampler = *options.sampler;
  const lifecycle::CycleResult& result = run.cycle;
  out << "backendlab profile: " << ConfigLine(options) << "\n" << MachineLine(MachineHeader()) << "\n";
  out << absl::StrFormat(
      "sampler: %s clock, %d Hz requested, %s unwinding: %d samples from %d processes, %d dropped (buffer full), "
      "%d stacks cut at %d frames\n",
      profiling::SampleClockName(sampler.clock), sampler.frequency_hz, profiling::UnwinderName(sampler.unwinder),
      result.samples.size(), run.processes, result.samples_dropped, result.samples_truncated, profiling::kMaxFrames);
  if (run.backend_cpu_seconds > 0) {
    out << absl::StrFormat("         %.0f samples per second of the backends' CPU time (phase counters: %.2f s)%s\n",
                           run.samples_per_cpu_second, run.backend_cpu_seconds,
                           sampler.clock == profiling::SampleClock::kCpu
                               ? "; CPU-time timers fire at most once per kernel tick (CONFIG_HZ)"
                               : "");
  }
  if (!result.samples_status.ok()) out << "samples incomplete: " << result.samples_status.message() << "\n";
  out << absl::StrFormat("connections/s while sampled: %.1f (%d measured backends)\n\n",
                         run.summary.connections_per_second, result.connections);

  PhaseReport(run.summary, options.backend.counters).PrintText(out);
  for (const absl::Status& why : result.counters_unavailable) out << why.message() << "\n";
  out << "\n";
  out << "samples by phase, beside the time each phase's counters measured on the sampled clock (fork includes the\n"
         "postmaster's fork(); reap, the kernel's teardown after _exit, is invisible to a user-space sampler):\n";
  PrintPhaseShares(out, run.phases, sampler.clock);
  const profiling::FoldedStacks& backends = run.views.measured;
  out << absl::StrFormat("\ntop %d functions of the backends, built-in sampler (%d samples; self: the leaf frame, "
                         "total: anywhere on the stack):\n",
                         top_n, backends.total_samples());
  profiling::PrintTopN(out, top);
  if (backends.total_samples() == 0) {
    out << "(no backend samples: the backends ran for less CPU time than one sampling period; raise --connections"
           " or --frequency)\n";
  }
}

void PrintPerfProfile(std::ostream& out, const profiling::FoldedStacks& perf_backends, int64_t top_n,
                      const std::vector<profiling::FunctionSamples>& top) {
  const std::vector<profiling::FunctionSamples> perf_top = perf_backends.TopN(static_cast<size_t>(top_n));
  out << absl::StrFormat("\ntop %d functions of the backends, perf (%d samples, kernel frames folded into their "
                         "user-space caller):\n",
                         top_n, perf_backends.total_samples());
  profiling::PrintTopN(out, perf_top);
  out << absl::StrFormat("\nagreement: %d of the top 5 functions by self samples are the same in both (perf may also\n"
                         "name functions of system libraries from their separate debug files; the sampler cannot)\n",
                         profiling::CommonTop(top, perf_top, 5));
}

absl::Status WriteView(const std::string& dir, const profiling::ProfileView& view, std::vector<std::string>& written,
                       std::string* svg) {
  const std::string folded = absl::StrCat(dir, "/", view.name, ".folded");
  if (absl::Status s = WriteTextFile(folded, view.stacks.ToText()); !s.ok()) return s;
  written.push_back(folded);
  const std::string path = absl::StrCat(dir, "/", view.name, ".svg");
  const std::string drawn = profiling::RenderFlameGraphSvg(view.stacks, {.title = view.title});
  if (absl::Status s = WriteTextFile(path, drawn); !s.ok()) return s;
  written.push_back(path);
  if (svg != nullptr) *svg = drawn;
  return absl::OkStatus();
}

nlohmann::json ProfileHeader(const lifecycle::CycleOptions& options, const lifecycle::ProfileRun& run,
                             const std::vector<profiling::FunctionSamples>& top) {
  const profiling::SamplerOptions& sampler = *options.sampler;
  nlohmann::json header = MachineHeader();
  header["command"] = "profile";
  header["config"] = ConfigJson(options);
  header["summary"] = SummaryJson(run.summary, run.cycle);
  header["sampler"] = {{"clock", profiling::SampleClockName(sampler.clock)},
                       {"frequency_hz", sampler.frequency_hz},
                       {"unwinder", profiling::UnwinderName(sampler.unwinder)},
                       {"samples", run.cycle.samples.size()},
                       {"dropped", run.cycle.samples_dropped},
                       {"truncated", run.cycle.samples_truncated}};
  nlohmann::json top_json = nlohmann::json::array();
  for (const profiling::FunctionSamples& f : top) {
    top_json.push_back({{"function", f.name}, {"self", f.self}, {"total", f.total},
                        {"self_percent", f.self_percent}, {"total_percent", f.total_percent}});
  }
  header["top"] = top_json;
  return header;
}

}  // namespace backendlab::tools
