// Folding one run's samples into the views `backendlab profile` writes.
#include "profiling/profile_views.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace backendlab::profiling {
namespace {

std::string_view ComparableName(std::string_view name) {
  while (name.starts_with('_')) name.remove_prefix(1);
  return name;
}

}  // namespace

ProfileViews FoldViews(std::span<const RawSample> samples, FrameSymbolizer& symbolizer, const SampleLabels& labels) {
  auto in_phase = [&](const RawSample& s) { return !labels.phase(s.tag).empty(); };
  auto under_process = [&](const RawSample& s) { return std::vector<std::string>{labels.process(s)}; };
  ProfileViews out;
  auto add = [&](std::string name, std::string title, FoldedStacks stacks) {
    if (stacks.total_samples() > 0) out.views.push_back({std::move(name), std::move(title), std::move(stacks)});
  };
  out.measured = FoldSamples(
      samples, symbolizer,
      {.keep = [&](const RawSample& s) { return in_phase(s) && labels.process(s) == labels.measured; }, .prefix = nullptr});
  add("all", "backendlab: all processes", FoldSamples(samples, symbolizer, {.keep = nullptr, .prefix = under_process}));
  out.labeled = FoldSamples(samples, symbolizer, {.keep = nullptr, .prefix = [&](const RawSample& s) {
                              std::vector<std::string> prefix = {labels.process(s)};
                              if (in_phase(s)) prefix.push_back(absl::StrCat("[", labels.phase(s.tag), "]"));
                              return prefix;
                            }});
  add("phases", absl::StrCat("backendlab: ", labels.measured, "s by phase"),
      FoldSamples(samples, symbolizer,
                  {.keep = in_phase, .prefix = [&](const RawSample& s) {
                     return std::vector<std::string>{labels.process(s), absl::StrCat("[", labels.phase(s.tag), "]")};
                   }}));
  for (const int32_t tag : labels.phase_tags) {
    const std::string name = labels.phase(tag);
    add("phase-" + name, absl::StrCat("backendlab: ", labels.measured, "s in ", name),
        FoldSamples(samples, symbolizer, {.keep = [tag](const RawSample& s) { return s.tag == tag; }, .prefix = under_process}));
  }
  return out;
}

void PrintTopN(std::ostream& out, const std::vector<FunctionSamples>& top) {
  out << absl::StrFormat("%6s %7s %7s %7s  %s\n", "self%", "total%", "self", "total", "function");
  for (const FunctionSamples& f : top) {
    out << absl::StrFormat("%6.1f %7.1f %7d %7d  %s\n", f.self_percent, f.total_percent, f.self, f.total, f.name);
  }
}

int CommonTop(const std::vector<FunctionSamples>& a, const std::vector<FunctionSamples>& b, size_t n) {
  int common = 0;
  for (size_t i = 0; i < a.size() && i < n; ++i) {
    for (size_t j = 0; j < b.size() && j < n; ++j) common += ComparableName(a[i].name) == ComparableName(b[j].name);
  }
  return common;
}

}  // namespace backendlab::profiling
