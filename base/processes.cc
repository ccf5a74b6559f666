// The host's limits on descriptors, processes and memory, a process's
// children and memory, from getrlimit, /proc and cgroup v2.
#include "base/processes.h"

#include <dirent.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/statistics.h"

namespace backendlab {
namespace {

std::optional<int64_t> ReadNumber(const std::string& path) {
  std::ifstream in(path);
  int64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

// "Name:   1234 kB" in a /proc file of that shape: 1234; none if absent.
std::optional<int64_t> FieldKb(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, name.size() + 1, name + ":") != 0) continue;
    std::istringstream fields(line.substr(name.size() + 1));
    int64_t kb = 0;
    if (fields >> kb) return kb;
  }
  return std::nullopt;
}

// Every thread on the host: /proc/loadavg's fourth field, "running/total".
std::optional<int64_t> ThreadsNow() {
  std::ifstream in("/proc/loadavg");
  std::string load1, load5, load15, entities;
  if (!(in >> load1 >> load5 >> load15 >> entities)) return std::nullopt;
  const size_t slash = entities.find('/');
  if (slash == std::string::npos) return std::nullopt;
  return std::atoll(entities.c_str() + slash + 1);
}

// The processes `uid` owns now (a /proc/PID directory is owned by the
// process's effective user).
int64_t ProcessesOf(uid_t uid) {
  int64_t n = 0;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    struct stat st;
    if (stat(absl::StrCat("/proc/", e->d_name).c_str(), &st) == 0 && st.st_uid == uid) ++n;
  }
  closedir(dir);
  return n;
}

// This process's cgroup v2 directory ("0::/path" in /proc/self/cgroup), or "".
std::string CgroupV2Directory() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, 3, "0::") == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return "";
}

absl::Status Refuse(const HostNeeds& needs, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(needs.what, ": ", why));
}

}  // namespace

absl::Status CheckHostLimits(const HostNeeds& needs) {
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    if (nofile.rlim_cur < nofile.rlim_max) {
      nofile.rlim_cur = nofile.rlim_max;
      setrlimit(RLIMIT_NOFILE, &nofile);
    }
    if (nofile.rlim_max != RLIM_INFINITY && static_cast<int64_t>(nofile.rlim_max) < needs.descriptors) {
      return Refuse(needs, absl::StrCat("needs ", needs.descriptors, " open descriptors, RLIMIT_NOFILE's hard limit is ",
                                        nofile.rlim_max, " (ulimit -Hn)"));
    }
  }
  if (needs.processes > 0) {
    rlimit nproc{};
    if (needs.uid != 0 && getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY) {
      const int64_t now = ProcessesOf(needs.uid);
      if (static_cast<int64_t>(nproc.rlim_cur) - now < needs.processes) {
        return Refuse(needs, absl::StrCat("needs ", needs.processes, " more processes, RLIMIT_NPROC is ", nproc.rlim_cur,
                                          " (ulimit -u) and user ", needs.uid, " has ", now));
      }
    }
    if (const std::optional<int64_t> threads = ThreadsNow()) {
      for (const char* limit : {"pid_max", "threads-max"}) {
        const std::optional<int64_t> max = ReadNumber(absl::StrCat("/proc/sys/kernel/", limit));
        if (max && *max - *threads < needs.processes) {
          return Refuse(needs, absl::StrCat("needs ", needs.processes, " more processes, kernel.", limit, " is ", *max,
                                            " and ", *threads, " threads run now"));
        }
      }
    }
    const std::string cgroup = CgroupV2Directory();
    const std::optional<int64_t> max = cgroup.empty() ? std::nullopt : ReadNumber(cgroup + "/pids.max");  // "max": none
    const std::optional<int64_t> current = cgroup.empty() ? std::nullopt : ReadNumber(cgroup + "/pids.current");
    if (max && current && *max - *current < needs.processes) {
      return Refuse(needs, absl::StrCat("needs ", needs.processes, " more processes, the cgroup's pids.max is ", *max,
                                        " and ", *current, " run in it now"));
    }
  }
  if (needs.memory_bytes > 0) {
    if (const std::optional<int64_t> available = FieldKb("/proc/meminfo", "MemAvailable")) {
      if (*available * 1024 < needs.memory_bytes) {
        return Refuse(needs, absl::StrCat("needs about ", needs.memory_bytes >> 20, " MiB of memory, MemAvailable is ",
                                          *available >> 10, " MiB"));
      }
    }
  }
  return absl::OkStatus();
}

std::optional<ProcessMemory> ReadProcessMemory(pid_t pid) {
  const std::string rollup = absl::StrCat("/proc/", pid, "/smaps_rollup");
  const std::optional<int64_t> rss = FieldKb(rollup, "Rss");
  const std::optional<int64_t> pss = FieldKb(rollup, "Pss");
  const std::optional<int64_t> clean = FieldKb(rollup, "Private_Clean");
  const std::optional<int64_t> dirty = FieldKb(rollup, "Private_Dirty");
  const std::optional<int64_t> pte = FieldKb(absl::StrCat("/proc/", pid, "/status"), "VmPTE");
  if (!rss || !pss || !clean || !dirty || !pte) return std::nullopt;
  return ProcessMemory{*rss, *pss, *clean + *dirty, *pte};
}

std::optional<ProcessMemory> MedianMemory(std::span<const ProcessMemory> rounds) {
  if (rounds.empty()) return std::nullopt;
  auto median = [&](int64_t ProcessMemory::*field) {
    std::vector<double> v;
    for (const ProcessMemory& m : rounds) v.push_back(static_cast<double>(m.*field));
    return static_cast<int64_t>(MedianWithInterval(v).median);
  };
  return ProcessMemory{median(&ProcessMemory::rss_kb), median(&ProcessMemory::pss_kb), median(&ProcessMemory::private_kb),
                       median(&ProcessMemory::page_tables_kb)};
}

std::optional<ProcessMemory> MedianProcessMemory(std::span<const pid_t> pids) {
  std::vector<ProcessMemory> each;
  for (pid_t pid : pids) {
    const std::optional<ProcessMemory> m = ReadProcessMemory(pid);
    if (!m) return std::nullopt;
    each.push_back(*m);
  }
  return MedianMemory(each);
}

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  const int fd = open(absl::StrCat("/proc/", pid, "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[2048];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  // The fields after the comm, which may hold spaces and parentheses: state
  // ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice num_threads itrealvalue starttime.
  const char* after = std::strrchr(buf, ')');
  if (after == nullptr) return std::nullopt;
  ProcStat s;
  s.entry.pid = pid;
  int ppid = 0, pgrp = 0;
  long long v[9];
  if (std::sscanf(after + 1, " %c %d %d %*d %*d %*d %*u %lld %lld %lld %lld %lld %lld %lld %lld %*d %*d %*d %*d %lld",
                  &s.entry.state, &ppid, &pgrp, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) != 12) {
    return std::nullopt;
  }
  s.entry.ppid = ppid;
  s.entry.pgrp = pgrp;
  s.minor_faults = v[0];
  s.children_minor_faults = v[1];
  s.major_faults = v[2];
  s.children_major_faults = v[3];
  s.user_ticks = v[4];
  s.system_ticks = v[5];
  s.children_user_ticks = v[6];
  s.children_system_ticks = v[7];
  s.start_time = v[8];
  return s;
}

std::vector<ProcessEntry> ProcessTable() {
  std::vector<ProcessEntry> all;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return all;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (const std::optional<ProcStat> s = ReadProcStat(static_cast<pid_t>(std::atoi(e->d_name)))) {
      all.push_back(s->entry);
    }
  }
  closedir(dir);
  return all;
}

std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> children;
  for (const ProcessEntry& p : ProcessTable()) {
    if (p.ppid == pid) children.push_back(p.pid);
  }
  return children;
}

}  // namespace backendlab
