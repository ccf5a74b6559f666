// Reads processes from /proc (parent, group, name), for tests that check that
// every forked process was reaped and nothing of a run outlived it.
#ifndef BACKENDLAB_TESTS_LIFECYCLE_CHILD_PROCESSES_H_
#define BACKENDLAB_TESTS_LIFECYCLE_CHILD_PROCESSES_H_

#include <dirent.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace backendlab::test_util {

// The fields of /proc/<pid>/stat the tests look at.
struct ProcessStat {
  pid_t pid = 0;
  std::string comm;
  pid_t ppid = 0;
  pid_t pgrp = 0;
};

// /proc/<pid>/stat, or nullopt if it cannot be read: the process may exit,
// and its entry vanish, at any point while we look. Plain read(): nothing
// that throws (libstdc++'s streams do on ESRCH).
inline std::optional<ProcessStat> ReadProcessStat(const char* pid) {
  const std::string path = std::string("/proc/") + pid + "/stat";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];  // pid, comm (at most 64 bytes escaped), then the short fields up to pgrp
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses,
  // so the fields are read from after the last ')'.
  const char* open_paren = std::strchr(buf, '(');
  const char* close_paren = std::strrchr(buf, ')');
  if (open_paren == nullptr || close_paren == nullptr || close_paren < open_paren) return std::nullopt;
  ProcessStat stat;
  stat.pid = static_cast<pid_t>(std::strtol(pid, nullptr, 10));
  stat.comm.assign(open_paren + 1, close_paren);
  char state = 0;
  int ppid = 0, pgrp = 0;
  if (std::sscanf(close_paren + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) return std::nullopt;
  stat.ppid = ppid;
  stat.pgrp = pgrp;
  return stat;
}

// Every process there is, as far as it could be read: those that exit while
// /proc is listed are left out.
inline std::vector<ProcessStat> AllProcesses() {
  std::vector<ProcessStat> all;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return all;
  while (const dirent* entry = readdir(proc)) {
    const char* name = entry->d_name;
    if (name[0] == '\0' || std::strspn(name, "0123456789") != std::strlen(name)) continue;
    if (std::optional<ProcessStat> stat = ReadProcessStat(name)) all.push_back(*std::move(stat));
  }
  closedir(proc);
  return all;
}

// Every process whose parent is `parent`, zombies included: a zombie is a
// child nobody reaped, exactly what these tests look for.
inline std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  for (const ProcessStat& p : AllProcesses()) {
    if (p.ppid == parent) children.push_back(p.pid);
  }
  return children;
}

// The children of `parent` whose command name is `comm`: a tool's mock
// postmaster ("postmaster", PR_SET_NAME), not its clean-up watchdog ("awk").
inline std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& comm) {
  std::vector<pid_t> children;
  for (const ProcessStat& p : AllProcesses()) {
    if (p.ppid == parent && p.comm == comm) children.push_back(p.pid);
  }
  return children;
}

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_LIFECYCLE_CHILD_PROCESSES_H_
