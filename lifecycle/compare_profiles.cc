#include "lifecycle/compare_profiles.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lifecycle/backend_record.h"

namespace backendlab::lifecycle {

absl::StatusOr<CompareProfiles> ProfileCompareRows(const CompareMatrix& matrix, const CompareProfileOptions& options) {
  CompareProfiles out;
  for (const buffers::SharedBuffers& size : matrix.sizes) out.shared_buffers_bytes = std::max(out.shared_buffers_bytes, size.bytes);
  const CompareConfig* baseline = nullptr;
  std::vector<const CompareConfig*> others;
  for (const CompareConfig& c : matrix.configs) {
    if (c.key.aa || c.key.shared_buffers_bytes != out.shared_buffers_bytes ||
        c.options.clients != matrix.clients.front() || c.options.hold != matrix.holds.front()) {
      continue;
    }
    if (!SampledMode(c.options.mode)) {
      out.not_profiled.push_back(c.label);
      continue;
    }
    if (BaselineOf(matrix, c) == &c) {
      baseline = &c;
    } else {
      others.push_back(&c);
    }
  }
  if (baseline == nullptr) {
    return absl::NotFoundError(absl::StrCat("no ", matrix.baseline_label, " at the largest shared_buffers to profile against"));
  }
  others.insert(others.begin(), baseline);
  int index = 0;
  for (const CompareConfig* c : others) {
    ++index;
    CycleOptions o = c->options;
    o.connections = options.connections;
    o.duration = absl::ZeroDuration();
    o.sampler = options.sampler;
    if (options.progress) {
      o.progress = [&, index, c](const std::string& line) {
        options.progress(absl::StrCat("profiling ", index, "/", others.size(), " ", c->label, ": ", line));
      };
    }
    if (c == baseline && options.trace_connections > 0) {
      const int64_t first = o.hold + o.warmup, k = options.trace_connections;
      o.on_record = [&out, first, k](const BackendRecord& r) {
        if (r.sequence - first < k) {
          for (profiling::TraceSpan& span : SpansOf(r)) out.baseline_spans.push_back(std::move(span));
        }
      };
    }
    absl::StatusOr<ProfileRun> run = RunProfile(o);
    if (!run.ok()) return run.status();
    if (run->cycle.interrupted) {
      out.interrupted = true;
      return out;
    }
    CompareProfile p{.config = c, .run = *std::move(run), .diff = std::nullopt};
    if (c != baseline) p.diff = ProfileDiff(out.rows.front().run, baseline->label, p.run, c->label, options.sampler);
    out.rows.push_back(std::move(p));
  }
  return out;
}

}  // namespace backendlab::lifecycle
