// The host's processes: before a run that holds many, the soft
// descriptor limit raised to the hard one, and a need beyond a limit
// refused in one line naming it; and a process's memory as the kernel
// accounts it.
#include "base/processes.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace backendlab {
namespace {

// Runs `body` in a forked child (whose limits it may lower) and returns its
// exit status: 0 when every check in it held.
template <typename Body>
int InChild(Body body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body() ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

bool OneLineNaming(const absl::Status& s, const std::string& limit) {
  const std::string m(s.message());
  return absl::IsInvalidArgument(s) && m.find('\n') == std::string::npos && m.rfind("--hold=9: ", 0) == 0 &&
         m.find(limit) != std::string::npos;
}

TEST(ProcessesTest, RaisesTheSoftDescriptorLimitToTheHardOne) {
  EXPECT_EQ(InChild([] {
              rlimit low{64, 128};
              if (setrlimit(RLIMIT_NOFILE, &low) != 0) return false;
              if (!CheckHostLimits({.what = "--hold=9", .descriptors = 100}).ok()) return false;
              rlimit now{};
              getrlimit(RLIMIT_NOFILE, &now);
              return now.rlim_cur == 128 && now.rlim_max == 128;
            }),
            0);
}

TEST(ProcessesTest, DescriptorsBeyondTheHardLimitAreRefusedNamingIt) {
  EXPECT_EQ(InChild([] {
              rlimit low{64, 128};
              if (setrlimit(RLIMIT_NOFILE, &low) != 0) return false;
              const absl::Status s = CheckHostLimits({.what = "--hold=9", .descriptors = 1000});
              return OneLineNaming(s, "RLIMIT_NOFILE's hard limit is 128");
            }),
            0);
}

TEST(ProcessesTest, ProcessesAndMemoryBeyondTheHostAreRefusedNamingTheLimit) {
  // More processes than any kernel's pid_max (at most 2^22) allows.
  const absl::Status processes = CheckHostLimits({.what = "--hold=9", .processes = int64_t{1} << 23, .uid = getuid()});
  EXPECT_TRUE(OneLineNaming(processes, "more processes")) << processes;
  const absl::Status memory = CheckHostLimits({.what = "--hold=9", .memory_bytes = int64_t{1} << 62});
  EXPECT_TRUE(OneLineNaming(memory, "MemAvailable")) << memory;
  EXPECT_TRUE(CheckHostLimits({.what = "--hold=9", .descriptors = 8, .processes = 1, .memory_bytes = 1 << 20}).ok());
}

TEST(ProcessesTest, RlimitNprocCountsTheUsersProcesses) {
  EXPECT_EQ(InChild([] {
              // RLIMIT_NPROC does not bind root, and the check leaves root
              // out: as root the child becomes nobody first.
              if (getuid() == 0 && setuid(65534) != 0) return false;
              rlimit one{1, 1};
              if (setrlimit(RLIMIT_NPROC, &one) != 0) return false;
              const absl::Status s = CheckHostLimits({.what = "--hold=9", .processes = 1, .uid = getuid()});
              return OneLineNaming(s, "RLIMIT_NPROC is 1");
            }),
            0);
}

TEST(ProcessesTest, AProcesssMemoryGrowsByThePagesItTouches) {
  const std::optional<ProcessMemory> before = ReadProcessMemory(getpid());
  ASSERT_TRUE(before.has_value()) << "no /proc/self/smaps_rollup";
  EXPECT_GT(before->private_kb, 0);
  EXPECT_LE(before->private_kb, before->rss_kb);
  EXPECT_LE(before->pss_kb, before->rss_kb);
  EXPECT_GT(before->page_tables_kb, 0);
  constexpr size_t kBytes = 8 << 20;
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 1, kBytes);
  const std::optional<ProcessMemory> after = ReadProcessMemory(getpid());
  munmap(p, kBytes);
  ASSERT_TRUE(after.has_value());
  // Every touched page is resident, and this process's alone. (Its
  // private total may also lose pages meanwhile: another process mapping
  // the same binary, a parallel test, makes those file pages shared.)
  EXPECT_GE(after->rss_kb - before->rss_kb, int64_t{kBytes >> 10});
  EXPECT_LT(after->rss_kb - before->rss_kb, int64_t{(kBytes >> 10) + 1024});
  EXPECT_GE(after->private_kb, int64_t{kBytes >> 10});
  EXPECT_FALSE(ReadProcessMemory(-1).has_value());
}

TEST(ProcessesTest, ChildrenOfNamesEveryChildAndNoOther) {
  std::vector<pid_t> forked;
  for (int i = 0; i < 3; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    forked.push_back(pid);
  }
  std::vector<pid_t> children = ChildrenOf(getpid());
  for (pid_t pid : forked) {
    EXPECT_NE(std::find(children.begin(), children.end(), pid), children.end()) << pid;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  children = ChildrenOf(getpid());
  for (pid_t pid : forked) EXPECT_EQ(std::find(children.begin(), children.end(), pid), children.end()) << pid;
  EXPECT_TRUE(ChildrenOf(-1).empty());
}

}  // namespace
}  // namespace backendlab
