// A real server's samples, picked out of a system-wide perf recording and
// classified by phase.
#include "pgreal/server_profile.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/private_dir.h"
#include "base/processes.h"
#include "pgreal/phase_rules.h"
#include "profiling/perf_record.h"
#include "profiling/perf_script.h"
#include "profiling/process_symbolizer.h"
#include "profiling/process_tree.h"

namespace backendlab::pgreal {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "postgres: checkpointer " or "postgres: CLUSTER: walwriter " (argv
// overwritten by ps_status.c, NULs possible) -> "checkpointer", spaces as '_'
// since a role is a frame of the folded format.
std::string RoleFromCmdline(std::string cmdline) {
  for (char& c : cmdline) {
    if (c == '\0') c = ' ';
  }
  const size_t colon = cmdline.rfind(": ");
  std::string name = colon == std::string::npos ? cmdline : cmdline.substr(colon + 2);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  while (!name.empty() && name.front() == ' ') name.erase(name.begin());
  for (char& c : name) {
    if (c == ' ' || c == ';') c = '_';
  }
  return name.empty() ? "aux" : name;
}


// A server's samples, each classified and added to the profile's stacks
// under its process's role: the one place both profilers' samples become a
// ServerProfile.
class ProfileBuilder {
 public:
  ProfileBuilder(int major, int64_t postmaster, const absl::flat_hash_map<int64_t, std::string>& aux_roles)
      : classifier_(major), postmaster_(postmaster), aux_roles_(aux_roles) {
    profile_.major = major;
    profile_.postmaster_pid = postmaster;
    for (const auto& [pid, role] : aux_roles) profile_.aux_pids.push_back(pid);
  }

  // One sample of process `pid`, frames root first, the last `kernel_frames`
  // of them the kernel's.
  void Add(int64_t pid, std::span<const std::string> frames, size_t kernel_frames, int64_t time_ns = -1) {
    std::string role(kBackendRole);
    if (pid == postmaster_) {
      role = kPostmasterRole;
    } else if (auto aux = aux_roles_.find(pid); aux != aux_roles_.end()) {
      role = aux->second;
    }
    const std::optional<RealPhase> classified = classifier_.Classify(role, frames);
    const std::string_view phase = PhaseWord(classified);
    ++counts_[phase];
    if (time_ns >= 0) {
      profile_.timeline.push_back({pid, time_ns, classified ? static_cast<int32_t>(*classified) : kNumRealPhases});
    }
    if (!classified &&
        std::any_of(frames.begin(), frames.end(), [](const std::string& f) { return f.starts_with('['); })) {
      ++profile_.unclaimed_unnamed_samples;
    }
    rooted_.assign(1, role);
    rooted_.insert(rooted_.end(), frames.begin(), frames.end());
    profile_.stacks.Add(rooted_, 1);
    profile_.by_phase[std::string(phase)].Add(rooted_, 1);
    // Without a user frame (a process past exit_mm in its teardown, a
    // child before its first return to user space) a sample names no
    // function a user-space sampler could see: counted, not ranked.
    if (kernel_frames >= frames.size()) {
      ++profile_.kernel_only_samples;
      return;
    }
    rooted_.resize(rooted_.size() - kernel_frames);
    profile_.user_stacks.Add(rooted_, 1);
  }

  ServerProfile Finish() {
    for (const NamedValue<RealPhase>& phase : kRealPhaseNames) {
      profile_.phases.push_back({std::string(phase.name), counts_[phase.name]});
    }
    profile_.phases.push_back({std::string(kUnclaimed), counts_[kUnclaimed]});
    profile_.unclaimed_samples = counts_[kUnclaimed];
    profile_.server_samples = profile_.stacks.total_samples();
    return std::move(profile_);
  }

 private:
  const PhaseClassifier classifier_;
  const int64_t postmaster_;
  const absl::flat_hash_map<int64_t, std::string>& aux_roles_;
  ServerProfile profile_;
  absl::flat_hash_map<std::string_view, int64_t> counts_;
  std::vector<std::string> rooted_;
};


}  // namespace

absl::flat_hash_map<int64_t, std::string> AuxiliaryProcesses(pid_t postmaster) {
  absl::flat_hash_map<int64_t, std::string> roles;
  for (pid_t pid : ChildrenOf(postmaster)) {
    roles[pid] = RoleFromCmdline(ReadSmallFile(absl::StrCat("/proc/", pid, "/cmdline")));
  }
  return roles;
}

absl::StatusOr<ServerProfile> BuildServerProfile(std::string_view perf_script, int64_t postmaster,
                                                 const absl::flat_hash_map<int64_t, std::string>& aux_roles,
                                                 int major) {
  profiling::PerfScriptOptions parse;
  parse.short_names = true;  // kernel frames kept: copy_process, do_exit are phases
  absl::StatusOr<profiling::ProcessTreeSamples> tree = profiling::SamplesOfProcessTree(perf_script, postmaster, parse);
  if (!tree.ok()) return tree.status();
  ProfileBuilder builder(major, postmaster, aux_roles);
  for (const profiling::PerfScriptSample& sample : tree->samples) {
    builder.Add(sample.pid, sample.frames, sample.kernel_frames, static_cast<int64_t>(sample.time * 1e9));
  }
  ServerProfile profile = builder.Finish();
  profile.other_samples = tree->other_samples;
  profile.lost_samples = tree->lost_samples;
  profile.backends_forked = tree->forks;
  return profile;
}

ServerProfile BuildBuiltinServerProfile(std::span<const profiling::RawSample> samples,
                                        profiling::FrameSymbolizer& symbolizer, int64_t postmaster,
                                        const absl::flat_hash_map<int64_t, std::string>& aux_roles, int major) {
  ProfileBuilder builder(major, postmaster, aux_roles);
  std::vector<std::string> frames;
  for (const profiling::RawSample& sample : samples) {
    frames.clear();
    profiling::AppendFrames(sample, symbolizer, frames);
    builder.Add(sample.pid, frames, 0);
  }
  ServerProfile profile = builder.Finish();
  profile.profiler = std::string(ProfilerName(Profiler::kBuiltin));
  profile.unwinder = "libunwind";
  return profile;
}

profiling::FoldedStacks LabeledStacks(const ServerProfile& profile) {
  profiling::FoldedStacks labeled;
  std::vector<std::string> frames;
  for (const auto& [phase, stacks] : profile.by_phase) {
    for (const auto& [stack, count] : stacks.stacks()) {
      const std::vector<std::string_view> split = profiling::SplitFrames(stack);
      frames.assign(1, std::string(split.front()));
      frames.push_back(absl::StrCat("[", phase, "]"));
      frames.insert(frames.end(), split.begin() + 1, split.end());
      labeled.Add(frames, count);
    }
  }
  return labeled;
}

std::vector<profiling::TraceSpan> TraceSpans(const ServerProfile& profile, int backends) {
  std::vector<profiling::TraceSpan> spans;
  if (profile.timeline.empty() || profile.frequency_hz <= 0) return spans;
  const int64_t period = 1'000'000'000LL / profile.frequency_hz;
  const int64_t postmaster = profile.postmaster_pid;
  absl::flat_hash_map<int64_t, std::string> tracks;  // pid -> name, the postmaster and the first backends
  tracks[postmaster] = "postmaster";
  int named = 0;
  absl::flat_hash_map<int64_t, size_t> open;  // pid -> its span being extended
  for (const ServerProfile::TimedSample& s : profile.timeline) {
    auto track = tracks.find(s.pid);
    if (track == tracks.end()) {
      const bool aux = std::find(profile.aux_pids.begin(), profile.aux_pids.end(), s.pid) != profile.aux_pids.end();
      if (aux || named >= backends) continue;
      track = tracks.emplace(s.pid, absl::StrCat("backend ", s.pid)).first;
      ++named;
    }
    const std::string_view phase = s.phase < kNumRealPhases ? kRealPhaseNames[s.phase].name : kUnclaimed;
    auto it = open.find(s.pid);
    if (it != open.end()) {
      profiling::TraceSpan& last = spans[it->second];
      if (last.name == phase && s.time_ns - (last.start_ns + last.duration_ns) <= 2 * period) {
        last.duration_ns = s.time_ns + period - last.start_ns;
        continue;
      }
    }
    open[s.pid] = spans.size();
    spans.push_back({std::string(phase), "phase", s.pid, track->second, s.time_ns, period});
  }
  return spans;
}

absl::StatusOr<ServerProfile> ProfileServer(pid_t postmaster, const ServerProfileOptions& options,
                                            const std::function<absl::Status()>& workload) {
  if (postmaster <= 0 || (kill(postmaster, 0) != 0 && errno == ESRCH)) {
    return absl::NotFoundError(absl::StrCat("no postmaster with pid ", postmaster, " is running"));
  }
  const absl::flat_hash_map<int64_t, std::string> aux_roles = AuxiliaryProcesses(postmaster);
  std::string dir = options.work_dir;
  PrivateDir made;  // removed on every path
  if (dir.empty()) {
    absl::StatusOr<PrivateDir> made_now = PrivateDir::Make("backendlab-pgprofile");
    if (!made_now.ok()) return made_now.status();
    made = std::move(*made_now);
    dir = made.path();
  }
  profiling::SystemWideRecordOptions record;
  record.work_dir = dir;
  record.frequency_hz = options.frequency_hz;
  record.call_graph = "dwarf";  // Debian's server has no frame pointers
  absl::StatusOr<profiling::SystemWideRecording> recording = profiling::RecordSystemWide(record, workload);
  if (!recording.ok()) return recording.status();
  absl::StatusOr<ServerProfile> profile = BuildServerProfile(recording->script, postmaster, aux_roles, options.major);
  if (!profile.ok()) return profiling::PerfOutputNotUnderstood(profile.status());
  profile->unwinder = record.call_graph;
  profile->record_seconds = recording->recorded_seconds;
  profile->frequency_hz = options.frequency_hz;
  profile->perf_command = recording->record_command;
  return profile;
}

absl::Status BuiltinRecording::Record(const std::function<absl::Status()>& workload) {
  if (postmaster_ <= 0 || (kill(postmaster_, 0) != 0 && errno == ESRCH)) {
    return absl::NotFoundError(absl::StrCat("no postmaster with pid ", postmaster_, " is running"));
  }
  aux_roles_ = AuxiliaryProcesses(postmaster_);
  processes_before_ = file_.armed() + file_.failed();
  failed_before_ = file_.failed();
  const auto started = std::chrono::steady_clock::now();
  file_.SetRecording(true);
  absl::Status run = workload();
  file_.SetRecording(false);
  record_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!run.ok()) return run;
  // While the postmaster lives: its backends' mappings were its own.
  absl::StatusOr<std::unique_ptr<profiling::ProcessSymbolizer>> symbolizer =
      profiling::ProcessSymbolizer::OfProcess(postmaster_);
  if (!symbolizer.ok()) return symbolizer.status();
  symbolizer_ = std::move(*symbolizer);
  return absl::OkStatus();
}

absl::StatusOr<ServerProfile> BuiltinRecording::Profile() {
  if (symbolizer_ == nullptr) return absl::FailedPreconditionError("BuiltinRecording::Profile before a Record");
  int64_t torn = 0;
  const std::vector<profiling::RawSample> samples = file_.Samples(&torn);
  ServerProfile profile = BuildBuiltinServerProfile(samples, *symbolizer_, postmaster_, aux_roles_, major_);
  profile.lost_samples = file_.dropped() + torn;
  profile.backends_forked = file_.armed() + file_.failed() - processes_before_;
  profile.unarmed_processes = file_.failed() - failed_before_;
  profile.record_seconds = record_seconds_;
  profile.frequency_hz = file_.frequency_hz();
  return profile;
}

}  // namespace backendlab::pgreal
