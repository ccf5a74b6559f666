// A real server's samples, picked out of a system-wide perf recording and
// classified by phase.
#include "pgreal/server_profile.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "pgreal/phase_rules.h"
#include "profiling/perf_record.h"
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

// The parent pid in /proc/PID/stat: the field after the comm's closing ')'.
int64_t ParentOf(const std::string& stat) {
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  int64_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

// Removes a directory ProfileServer made, on every path.
class OwnedDir {
 public:
  explicit OwnedDir(std::string path) : path_(std::move(path)) {}
  ~OwnedDir() {
    if (!path_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }
  OwnedDir(const OwnedDir&) = delete;
  OwnedDir& operator=(const OwnedDir&) = delete;

 private:
  std::string path_;
};

}  // namespace

absl::flat_hash_map<int64_t, std::string> AuxiliaryProcesses(pid_t postmaster) {
  absl::flat_hash_map<int64_t, std::string> roles;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return roles;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    const std::string base = absl::StrCat("/proc/", pid);
    if (ParentOf(ReadSmallFile(base + "/stat")) != postmaster) continue;
    roles[pid] = RoleFromCmdline(ReadSmallFile(base + "/cmdline"));
  }
  closedir(proc);
  return roles;
}

absl::StatusOr<ServerProfile> BuildServerProfile(std::string_view perf_script, int64_t postmaster,
                                                 const absl::flat_hash_map<int64_t, std::string>& aux_roles,
                                                 int major) {
  profiling::PerfScriptOptions parse;
  parse.short_names = true;  // kernel frames kept: copy_process, do_exit are phases
  absl::StatusOr<profiling::ProcessTreeSamples> tree = profiling::SamplesOfProcessTree(perf_script, postmaster, parse);
  if (!tree.ok()) return tree.status();
  const PhaseClassifier classifier(major);
  ServerProfile profile;
  profile.major = major;
  profile.other_samples = tree->other_samples;
  profile.lost_samples = tree->lost_samples;
  profile.backends_forked = tree->forks;
  absl::flat_hash_map<std::string_view, int64_t> counts;
  std::vector<std::string> rooted;
  for (const profiling::PerfScriptSample& sample : tree->samples) {
    std::string role(kBackendRole);
    if (sample.pid == postmaster) {
      role = kPostmasterRole;
    } else if (auto aux = aux_roles.find(sample.pid); aux != aux_roles.end()) {
      role = aux->second;
    }
    const std::string_view phase = classifier.Classify(role, sample.frames);
    ++counts[phase];
    rooted.assign(1, role);
    rooted.insert(rooted.end(), sample.frames.begin(), sample.frames.end());
    profile.stacks.Add(rooted, 1);
    profile.by_phase[std::string(phase)].Add(rooted, 1);
  }
  for (std::string_view phase : kPhaseNames) profile.phases.push_back({std::string(phase), counts[phase]});
  profile.phases.push_back({std::string(kUnclaimed), counts[kUnclaimed]});
  profile.unclaimed_samples = counts[kUnclaimed];
  profile.server_samples = profile.stacks.total_samples();
  return profile;
}

absl::StatusOr<ServerProfile> ProfileServer(pid_t postmaster, const ServerProfileOptions& options,
                                            const std::function<absl::Status()>& workload) {
  if (postmaster <= 0 || (kill(postmaster, 0) != 0 && errno == ESRCH)) {
    return absl::NotFoundError(absl::StrCat("no postmaster with pid ", postmaster, " is running"));
  }
  const absl::flat_hash_map<int64_t, std::string> aux_roles = AuxiliaryProcesses(postmaster);
  std::string dir = options.work_dir;
  std::string made;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/backendlab-pgprofile.XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::UnavailableError(absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno)));
    }
    dir = made = pattern;
  }
  const OwnedDir cleanup(made);
  profiling::SystemWideRecordOptions record;
  record.work_dir = dir;
  record.frequency_hz = options.frequency_hz;
  record.call_graph = "dwarf";  // Debian's server has no frame pointers
  absl::StatusOr<profiling::SystemWideRecording> recording = profiling::RecordSystemWide(record, workload);
  if (!recording.ok()) return recording.status();
  absl::StatusOr<ServerProfile> profile = BuildServerProfile(recording->script, postmaster, aux_roles, options.major);
  if (!profile.ok()) return profile.status();
  profile->unwinder = record.call_graph;
  profile->record_seconds = recording->recorded_seconds;
  profile->frequency_hz = options.frequency_hz;
  profile->perf_command = recording->record_command;
  return profile;
}

}  // namespace backendlab::pgreal
