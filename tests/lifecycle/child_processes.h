// Finds the children of a process by scanning /proc, for tests that check that
// every forked process was reaped.
#ifndef BACKENDLAB_TESTS_LIFECYCLE_CHILD_PROCESSES_H_
#define BACKENDLAB_TESTS_LIFECYCLE_CHILD_PROCESSES_H_

#include <dirent.h>
#include <sys/types.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace backendlab::test_util {

// Every process whose parent is `parent`, zombies included: a zombie is a
// child nobody reaped, exactly what these tests look for.
inline std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (const dirent* entry = readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    std::ifstream in("/proc/" + name + "/stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
    // the fields are read from after the last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;  // gone while we looked
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == parent) children.push_back(static_cast<pid_t>(std::stol(name)));
  }
  closedir(proc);
  return children;
}

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_LIFECYCLE_CHILD_PROCESSES_H_
