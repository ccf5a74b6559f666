// `backendlab pg --profile`'s phase table, top functions and flame graphs, per
// profiler, and the two profilers' rankings side by side.
#include "tools/pg_profile_report.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/summary.h"
#include "pgreal/phase_rules.h"
#include "profiling/profile_views.h"
#include "tools/flags.h"
#include "tools/diff_report.h"
#include "tools/profile_report.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

double Percent(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

// "15/128MB tcp+ssl 4 clients" -> "15-128MB-tcp+ssl-4-clients": a row's
// subdirectory of --out, with no space for a shell to split.
std::string ProfileSubdirectory(const std::string& label) {
  std::string name = label;
  std::replace(name.begin(), name.end(), '/', '-');
  std::replace(name.begin(), name.end(), ' ', '-');
  return name;
}

// One profile's keys in the JSON header.
nlohmann::json ProfileJson(const pgreal::PgTargetResult& t, const pgreal::ServerProfile& p) {
  nlohmann::json phases = nlohmann::json::object();
  for (const pgreal::PhaseSamples& phase : p.phases) phases[phase.phase] = phase.samples;
  return {{"profiler", p.profiler},
          {"phases", phases},
          {"server_samples", p.server_samples},
          {"unclaimed_samples", p.unclaimed_samples},
          {"unclaimed_unnamed_samples", p.unclaimed_unnamed_samples},
          {"other_samples", p.other_samples},
          {"lost_samples", p.lost_samples},
          {"backends_forked", p.backends_forked},
          {"unarmed_processes", p.unarmed_processes},
          {"kernel_only_samples", p.kernel_only_samples},
          {"unwinder", p.unwinder},
          {"frequency_hz", p.frequency_hz},
          {"record_seconds", p.record_seconds},
          {"profiled_connections_per_second", t.profiled_rate},
          {"unrecorded_connections_per_second", t.unrecorded_rate},
          {"connections_per_second", Summarize(t.rates).median}};
}

}  // namespace

void PrintPgProfile(std::ostream& out, const pgreal::ServerProfile& profile, int64_t top_n) {
  const bool builtin = profile.profiler == pgreal::ProfilerName(pgreal::Profiler::kBuiltin);
  if (builtin) {
    out << absl::StrFormat(
        "built-in sampler: every process of the server, a CPU-time timer at %d Hz in each (the kernel's tick caps "
        "it), %s unwinding, %.1f s recorded: %d samples of the server (%d backends forked meanwhile)\n",
        profile.frequency_hz, profile.unwinder, profile.record_seconds, profile.server_samples,
        profile.backends_forked);
    if (profile.unarmed_processes > 0) {
      out << absl::StrFormat("%d processes forked meanwhile could not arm a timer and were not sampled (the server's "
                             "log says why)\n",
                             profile.unarmed_processes);
    }
    if (profile.lost_samples > 0) {
      out << absl::StrFormat("%d samples lost (the sample file full, or a process killed mid-sample): the shares "
                             "below are of the samples kept\n",
                             profile.lost_samples);
    }
  } else {
    out << absl::StrFormat(
        "perf: every CPU, cpu-clock at %d Hz, %s unwinding, %.1f s recorded: %d samples of the server "
        "(%d backends forked meanwhile), %d of other processes dropped\n",
        profile.frequency_hz, profile.unwinder, profile.record_seconds, profile.server_samples,
        profile.backends_forked, profile.other_samples);
    out << "  " << absl::StrJoin(profile.perf_command, " ") << "\n";
    if (profile.lost_samples > 0) {
      out << absl::StrFormat(
          "perf lost %d samples (its ring buffer was full): the shares below are of the samples it kept\n",
          profile.lost_samples);
    }
  }
  out << absl::StrFormat("phases of PostgreSQL %d (rules: --explain-phases):\n", profile.major);
  out << absl::StrFormat("%-17s %9s %9s\n", "phase", "samples", "% server");
  for (const pgreal::PhaseSamples& p : profile.phases) {
    out << absl::StrFormat("%-17s %9d %9.1f\n", p.phase, p.samples, Percent(p.samples, profile.server_samples));
  }
  if (profile.unclaimed_samples > 0) {
    out << absl::StrFormat(
        "unclaimed: %d samples; %d of them hold a frame no symbol names ([postgres], [unknown]: a stripped binary's "
        "static functions, a library without symbols), which no rule can match; %d matched no rule\n",
        profile.unclaimed_samples, profile.unclaimed_unnamed_samples,
        profile.unclaimed_samples - profile.unclaimed_unnamed_samples);
  }
  const profiling::FoldedStacks backends = profile.stacks.Under(pgreal::kBackendRole);
  out << absl::StrFormat("\ntop %d functions of the backends (%d samples; %s; self: the leaf frame, "
                         "total: anywhere on the stack):\n",
                         top_n, backends.total_samples(),
                         builtin ? "user space only: kernel time is charged to the frame that entered the kernel"
                                 : "kernel frames kept");
  profiling::PrintTopN(out, backends.TopN(static_cast<size_t>(top_n)));
}

ProfileAgreement PrintPgProfileAgreement(std::ostream& out, const pgreal::ServerProfile& builtin,
                                         const pgreal::ServerProfile& perf) {
  constexpr size_t kTop = 10;
  const profiling::FoldedStacks sampled = builtin.user_stacks.Under(pgreal::kBackendRole);
  const profiling::FoldedStacks recorded = perf.user_stacks.Under(pgreal::kBackendRole);
  const std::vector<profiling::FunctionSamples> sampled_top = sampled.TopN(kTop);
  const std::vector<profiling::FunctionSamples> recorded_top = recorded.TopN(kTop);
  out << absl::StrFormat("top %d functions of the backends, user space only (perf's kernel frames folded into the "
                         "user frame that entered the kernel, as the sampler sees them; %d perf samples of the server "
                         "with no user frame at all, which no user-space sampler can take, left out)\n",
                         kTop, perf.kernel_only_samples);
  out << absl::StrFormat("built-in sampler (%d samples):\n", sampled.total_samples());
  profiling::PrintTopN(out, sampled_top);
  out << absl::StrFormat("perf (%d samples):\n", recorded.total_samples());
  profiling::PrintTopN(out, recorded_top);
  ProfileAgreement a;
  a.top_5 = profiling::CommonTop(sampled_top, recorded_top, 5);
  a.top_10 = profiling::CommonTop(sampled_top, recorded_top, 10);
  for (const profiling::FunctionSamples& f : sampled_top) a.builtin_top_10.push_back(f.name);
  for (const profiling::FunctionSamples& f : recorded_top) a.perf_top_10.push_back(f.name);
  out << absl::StrFormat("agreement: %d of the top 5 and %d of the top 10 functions by self samples are the same in "
                         "both (names compared without leading underscores: libc's aliases)\n",
                         a.top_5, a.top_10);
  return a;
}

absl::Status WritePgProfile(const std::string& dir, const pgreal::ServerProfile& profile,
                            std::vector<std::string>& written, std::string* phases_svg) {
  std::vector<profiling::ProfileView> views;
  views.push_back({"all", "PostgreSQL server: every sample, by process", profile.stacks});
  views.push_back({"phases", "PostgreSQL server: samples by process and phase", pgreal::LabeledStacks(profile)});
  for (const pgreal::PhaseSamples& p : profile.phases) {
    auto it = profile.by_phase.find(p.phase);
    if (it == profile.by_phase.end() || it->second.total_samples() == 0) continue;
    views.push_back({absl::StrCat("phase-", p.phase), absl::StrCat("PostgreSQL server: phase ", p.phase), it->second});
  }
  for (const profiling::ProfileView& view : views) {
    if (view.stacks.total_samples() == 0) continue;
    if (absl::Status s = WriteView(dir, view, written, view.name == "phases" ? phases_svg : nullptr); !s.ok()) return s;
  }
  return absl::OkStatus();
}

namespace {

// Each row's profile, by profiler: its tables, its files, its figure; the
// two profilers' rankings side by side where both recorded a row.
absl::Status ReportRowProfiles(const pgreal::PgResult& result, const std::string& dir, int64_t top_n,
                               std::ostream& out, nlohmann::json& header, std::vector<HtmlPage::Figure>* figures) {
  nlohmann::json by_profiler[2] = {nlohmann::json::object(), nlohmann::json::object()};
  nlohmann::json agreement = nlohmann::json::object();
  for (const pgreal::PgTargetResult& t : result.targets) {
    const pgreal::ServerProfile* of[2] = {nullptr, nullptr};
    for (const pgreal::ServerProfile& p : t.profiles) {
      const bool builtin = p.profiler == pgreal::ProfilerName(pgreal::Profiler::kBuiltin);
      of[builtin] = &p;
      const double change = t.unrecorded_rate > 0 ? 100.0 * (t.profiled_rate / t.unrecorded_rate - 1) : 0;
      out << "\n== " << t.label << " under " << (builtin ? "the built-in sampler" : "perf") << " ==\n";
      out << absl::StrFormat("recording cost: %.1f conn/s recorded against %.1f unrecorded just before (no counters "
                             "open%s): %.1f %% %s in one pair: not a measured cost\n",
                             t.profiled_rate, t.unrecorded_rate,
                             t.profiles.size() > 1 ? "; one pass recorded by both profilers" : "", std::abs(change),
                             change <= 0 ? "slower" : "faster");
      PrintPgProfile(out, p, top_n);
      const std::string subdir = absl::StrCat(dir, "/", ProfileSubdirectory(t.label), builtin ? "-builtin" : "");
      if (mkdir(subdir.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(subdir), ": ", std::strerror(errno)));
      }
      std::vector<std::string> written;
      std::string svg;
      if (absl::Status s = WritePgProfile(subdir, p, written, figures != nullptr ? &svg : nullptr); !s.ok()) return s;
      if (figures != nullptr && !svg.empty()) {
        figures->push_back({absl::StrCat(t.label, ": where the server's time goes, by process and phase (", p.profiler, ")"),
                            std::move(svg)});
      }
      out << "folded stacks and flame graphs (" << written.size() << " files) in " << subdir
          << "/: all.svg by process, phases.svg by process and phase, phase-NAME.svg each\n";
      by_profiler[builtin][t.label] = ProfileJson(t, p);
    }
    if (of[0] != nullptr && of[1] != nullptr) {
      out << "\n== " << t.label << ": the built-in sampler against perf, on the same pass ==\n";
      const ProfileAgreement a = PrintPgProfileAgreement(out, *of[1], *of[0]);
      agreement[t.label] = {{"top_5_common", a.top_5},
                            {"top_10_common", a.top_10},
                            {"builtin_top_10", a.builtin_top_10},
                            {"perf_top_10", a.perf_top_10}};
    }
  }
  header["profiles"] = by_profiler[0];
  header["builtin_profiles"] = by_profiler[1];
  if (!agreement.empty()) header["profile_agreement"] = agreement;
  return absl::OkStatus();
}

// Each row against its baseline, phase by phase and stack by stack.
absl::Status ReportProfileChanges(const pgreal::PgResult& result, const std::string& dir, std::ostream& out,
                                  nlohmann::json& header, std::vector<HtmlPage::Figure>* figures) {
  nlohmann::json changes = nlohmann::json::object();
  for (const pgreal::ProfileChange& c : result.profile_changes) {
    const pgreal::PgTargetResult& t = result.targets[c.target];
    const pgreal::PgTargetResult& b = result.targets[c.baseline];
    out << "\n== " << t.label << " against " << b.label << " (" << c.profiler << ") ==\n";
    // A what-if against its stock server; a transport or a hold against its base row.
    const bool what_if = c.undone == pgreal::KeyPart::kWhatIf;
    const std::string base = what_if ? "stock" : "base", row = what_if ? "what-if" : "row";
    out << absl::StrFormat("%-17s %12s %12s %10s %9s %9s\n", "phase", base + " us", row + " us", "change us", base + " %",
                           row + " %");
    nlohmann::json phases = nlohmann::json::object();
    for (const pgreal::PhaseChange& p : c.phases) {
      const bool cpu = p.baseline_us >= 0 && p.row_us >= 0;
      out << absl::StrFormat("%-17s %12s %12s %10s %9.1f %9.1f\n", p.phase,
                             cpu ? absl::StrFormat("%.0f", p.baseline_us) : std::string("-"),
                             cpu ? absl::StrFormat("%.0f", p.row_us) : std::string("-"),
                             cpu ? absl::StrFormat("%+.0f", p.row_us - p.baseline_us) : std::string("-"),
                             p.baseline_percent, p.row_percent);
      phases[p.phase] = {{"baseline_percent", p.baseline_percent},
                         {"row_percent", p.row_percent},
                         {"baseline_us", cpu ? nlohmann::json(p.baseline_us) : nlohmann::json(nullptr)},
                         {"row_us", cpu ? nlohmann::json(p.row_us) : nlohmann::json(nullptr)}};
    }
    out << "us: server CPU per connection the phase is given (its share of one recorded pass's samples times the "
           "row's median server CPU per connection of the rounds, whose interval is in the table above)\n";
    nlohmann::json gone = nlohmann::json::array();
    for (const profiling::FunctionSamples& f : c.gone) gone.push_back(f.name);
    if (c.gone.empty()) {
      out << absl::StrFormat("left the profile: no function on %.0f %% or more of the %s backends' samples is "
                             "missing from the %s's\n",
                             pgreal::kGoneSharePercent, base, row);
    } else {
      out << absl::StrFormat("left the profile (on %.0f %% or more of the %s backends' samples, on none of the "
                             "%s's):\n",
                             pgreal::kGoneSharePercent, base, row);
      for (const profiling::FunctionSamples& f : c.gone) {
        out << absl::StrFormat("  %-40s %7d samples, %5.1f %% of the %s backends'\n", f.name, f.total,
                               f.total_percent, base);
      }
    }
    // The difference stack by stack: its flame graph beside the row's own.
    const std::string subdir = absl::StrCat(dir, "/", ProfileSubdirectory(t.label),
                                            c.profiler == pgreal::ProfilerName(pgreal::Profiler::kBuiltin) ? "-builtin" : "");
    std::vector<std::string> written;
    std::string svg;
    const std::string title = absl::StrCat(t.label, " against ", b.label, " (", c.profiler, ")");
    if (absl::Status s = WriteDiff(subdir, "diff", title, c.diff, written, figures != nullptr ? &svg : nullptr); !s.ok()) {
      return s;
    }
    if (figures != nullptr) figures->push_back({absl::StrCat("differential flame graph: ", title), std::move(svg)});
    PrintDiffTop(c.diff, out);
    out << "(one recorded pass of each: no interval) differential flame graph: " << written[1]
        << " (red grew, blue shrank; " << written[0] << ": stack A B)\n";
    changes[absl::StrCat(t.label, " (", c.profiler, ")")] = {
        {"baseline", b.label}, {"profiler", c.profiler}, {"phases", phases}, {"gone", gone}, {"diff", DiffJson(c.diff)}};
  }
  if (!changes.empty()) header["profile_changes"] = changes;
  return absl::OkStatus();
}

// Every profiled row in the exports' formats, and the page's timeline.
absl::Status ExportProfiles(const pgreal::PgResult& result, const ExportRequest& exports, std::ostream& out,
                            std::vector<profiling::TraceSpan>* timeline) {
  if (exports.any() || timeline != nullptr) {
    // Every profiled row in one file each: perf's profile where there is
    // one (its samples carry time, for the trace), else the built-in's.
    std::vector<profiling::FoldedStacks> labeled;
    std::vector<const pgreal::PgTargetResult*> rows;
    std::vector<const pgreal::ServerProfile*> profiles;
    for (const pgreal::PgTargetResult& t : result.targets) {
      if (t.profiles.empty()) continue;
      const pgreal::ServerProfile* p = &t.profiles.front();
      for (const pgreal::ServerProfile& q : t.profiles) {
        if (q.profiler == pgreal::ProfilerName(pgreal::Profiler::kPerf)) p = &q;
      }
      rows.push_back(&t);
      profiles.push_back(p);
      labeled.push_back(pgreal::LabeledStacks(*p));
    }
    profiling::ExportInput input{.title = "backendlab pg --profile", .sources = {}, .role = ProcessRole};
    std::vector<profiling::TraceSpan> spans;
    for (size_t i = 0; i < rows.size(); ++i) {
      input.sources.push_back({rows[i]->label, &labeled[i], 1'000'000'000LL / std::max(profiles[i]->frequency_hz, 1)});
      for (profiling::TraceSpan& span : pgreal::TraceSpans(*profiles[i], exports.trace_connections)) {
        span.process = absl::StrCat(rows[i]->label, ": ", span.process);
        spans.push_back(std::move(span));
      }
    }
    if (exports.any()) {
      std::vector<std::string> written;
      if (absl::Status s = WriteExports(exports, input, spans, written); !s.ok()) return s;
      out << "\nexports:";
      for (const std::string& f : written) out << " " << f;
      out << (spans.empty() && !exports.trace.empty() ? " (the trace holds no span: no sample in time)" : "") << "\n";
    }
    if (timeline != nullptr) *timeline = std::move(spans);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReportPgProfiles(const pgreal::PgResult& result, const std::string& dir, int64_t top_n,
                              const ExportRequest& exports, std::ostream& out, nlohmann::json& header,
                              std::vector<HtmlPage::Figure>* figures, std::vector<profiling::TraceSpan>* timeline) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(dir), ": ", std::strerror(errno)));
  }
  if (absl::Status s = ReportRowProfiles(result, dir, top_n, out, header, figures); !s.ok()) return s;
  if (absl::Status s = ReportProfileChanges(result, dir, out, header, figures); !s.ok()) return s;
  return ExportProfiles(result, exports, out, timeline);
}

}  // namespace backendlab::tools
