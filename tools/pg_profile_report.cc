// `backendlab pg --profile`'s phase table, top functions and flame graphs.
#include "tools/pg_profile_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "pgreal/phase_rules.h"
#include "profiling/profile_views.h"
#include "tools/profile_report.h"

namespace backendlab::tools {
namespace {

double Percent(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

}  // namespace

void PrintPgProfile(std::ostream& out, const pgreal::ServerProfile& profile, int64_t top_n) {
  out << absl::StrFormat(
      "perf: every CPU, cpu-clock at %d Hz, %s unwinding, %.1f s recorded: %d samples of the server "
      "(%d backends forked meanwhile), %d of other processes dropped\n",
      profile.frequency_hz, profile.unwinder, profile.record_seconds, profile.server_samples,
      profile.backends_forked, profile.other_samples);
  out << "  " << absl::StrJoin(profile.perf_command, " ") << "\n";
  if (profile.lost_samples > 0) {
    out << absl::StrFormat("perf lost %d samples (its ring buffer was full): the shares below are of the samples it kept\n",
                           profile.lost_samples);
  }
  out << absl::StrFormat("phases of PostgreSQL %d (rules: --explain-phases):\n", profile.major);
  out << absl::StrFormat("%-17s %9s %9s\n", "phase", "samples", "% server");
  for (const pgreal::PhaseSamples& p : profile.phases) {
    out << absl::StrFormat("%-17s %9d %9.1f\n", p.phase, p.samples, Percent(p.samples, profile.server_samples));
  }
  const profiling::FoldedStacks backends = profile.stacks.Under(pgreal::kBackendRole);
  out << absl::StrFormat("\ntop %d functions of the backends (%d samples; kernel frames kept; self: the leaf frame, "
                         "total: anywhere on the stack):\n",
                         top_n, backends.total_samples());
  profiling::PrintTopN(out, backends.TopN(static_cast<size_t>(top_n)));
}

absl::Status WritePgProfile(const std::string& dir, const pgreal::ServerProfile& profile,
                            std::vector<std::string>& written) {
  std::vector<profiling::ProfileView> views;
  views.push_back({"all", "PostgreSQL server: every sample, by process", profile.stacks});
  profiling::FoldedStacks phases;
  for (const auto& [phase, stacks] : profile.by_phase) {
    for (const auto& [stack, count] : stacks.stacks()) {
      std::vector<std::string> frames;
      for (std::string_view f : profiling::SplitFrames(stack)) frames.emplace_back(f);
      frames.insert(frames.begin() + 1, absl::StrCat("[", phase, "]"));
      phases.Add(frames, count);
    }
  }
  views.push_back({"phases", "PostgreSQL server: samples by process and phase", std::move(phases)});
  for (const pgreal::PhaseSamples& p : profile.phases) {
    auto it = profile.by_phase.find(p.phase);
    if (it == profile.by_phase.end() || it->second.total_samples() == 0) continue;
    views.push_back({absl::StrCat("phase-", p.phase), absl::StrCat("PostgreSQL server: phase ", p.phase), it->second});
  }
  for (const profiling::ProfileView& view : views) {
    if (view.stacks.total_samples() == 0) continue;
    if (absl::Status s = WriteView(dir, view, written); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace backendlab::tools
