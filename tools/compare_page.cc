#include "tools/compare_page.h"

#include <ostream>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/compiler.h"
#include "base/interleaved.h"
#include "buffers/shared_buffers.h"
#include "lifecycle/compare.h"
#include "lifecycle/compare_profiles.h"
#include "profiling/flame_graph.h"
#include "tools/progress.h"
#include "tools/server_columns.h"

namespace backendlab::tools {
namespace {

// --html's profiles: every configuration at the largest shared_buffers once
// more with the sampler, after the rounds; a line each of what it found.
absl::StatusOr<lifecycle::CompareProfiles> ProfileRows(const lifecycle::CompareMatrix& matrix, int64_t connections,
                                                       std::ostream& out) {
  lifecycle::CompareProfileOptions options;
  options.connections = connections;
  options.sampler.unwinder = kFramePointers ? profiling::Unwinder::kFramePointers : profiling::Unwinder::kLibunwind;
  ProgressLine progress;
  options.progress = progress.Callback();
  absl::StatusOr<lifecycle::CompareProfiles> profiles = lifecycle::ProfileCompareRows(matrix, options);
  progress.Clear();
  if (!profiles.ok() || profiles->interrupted) return profiles;
  out << absl::StrFormat("\nfor the page: each configuration at %s profiled once more after the rounds, %d connections "
                         "(built-in sampler, CPU clock, %d Hz; one run each: no interval):\n",
                         buffers::FormatSize(profiles->shared_buffers_bytes), connections, options.sampler.frequency_hz);
  for (const lifecycle::CompareProfile& p : profiles->rows) {
    if (!p.diff) {
      out << absl::StrFormat("  %s (the baseline): %d samples from %d processes\n", p.config->label,
                             p.run.cycle.samples.size(), p.run.processes);
      continue;
    }
    const profiling::FoldedDiff& d = *p.diff;
    out << absl::StrFormat("  %s: %.4g %s sampled, against %.4g", p.config->label, d.b_total(), d.unit(), d.a_total());
    const std::vector<profiling::FunctionDelta> grown = d.Grown(1), shrunk = d.Shrunk(1);
    if (!grown.empty()) out << absl::StrFormat("; grew most: %s %+.4g", grown[0].name, grown[0].self_change());
    if (!shrunk.empty()) out << absl::StrFormat("; shrank most: %s %+.4g", shrunk[0].name, shrunk[0].self_change());
    out << "\n";
  }
  for (const std::string& label : profiles->not_profiled) {
    out << "  " << label << ": not profiled (its mode's backends cannot be sampled: only fork's and inproc's)\n";
  }
  return profiles;
}

// The baseline's flame graph, then each configuration's diff against it.
void AddProfileFigures(const lifecycle::CompareProfiles& profiles, std::vector<HtmlPage::Figure>& figures) {
  const std::string at = absl::StrCat(" at ", buffers::FormatSize(profiles.shared_buffers_bytes));
  for (const lifecycle::CompareProfile& p : profiles.rows) {
    if (p.diff) {
      const std::string title = absl::StrCat(p.config->label, " against ", p.diff->a_name(), at);
      figures.push_back({absl::StrCat("differential flame graph: ", title),
                         profiling::RenderDiffFlameGraphSvg(*p.diff, {.title = title})});
      continue;
    }
    for (const profiling::ProfileView& v : p.run.views.views) {
      if (v.name != "all") continue;
      const std::string title = absl::StrCat(p.config->label, at, ": every sample, postmaster and backends");
      figures.push_back({absl::StrCat("flame graph: ", title), profiling::RenderFlameGraphSvg(v.stacks, {.title = title})});
    }
  }
}

}  // namespace

absl::Status WriteComparePage(const CompareRequest& request, const nlohmann::json& header, const Report& report,
                              const std::string& chart, const std::string& path, Transcript& out) {
  std::vector<HtmlPage::Figure> figures = {{"CPU per connection against shared_buffers", chart}};
  std::vector<profiling::TraceSpan> timeline;
  if (request.profile_connections > 0) {
    absl::StatusOr<lifecycle::CompareProfiles> profiles = ProfileRows(request.matrix, request.profile_connections, out);
    if (!profiles.ok()) return profiles.status();
    if (profiles->interrupted) return StoppedStatus();  // no page of a part
    AddProfileFigures(*profiles, figures);
    timeline = std::move(profiles->baseline_spans);
  }
  out << "page: " << path << "\n";
  HtmlPage page = PageOf("backendlab compare", header, report, out.text());
  page.chart_key = kServerCpuKey;
  page.chart_title = "CPU us per connection of the whole server, median of the rounds, 95 % interval";
  page.figures = std::move(figures);
  page.timeline = std::move(timeline);
  return WriteHtml(path, page);
}

}  // namespace backendlab::tools
