// The /proc reader the process tests rely on: a child is found with its name
// (spaces and parentheses included), and a process that is gone is no error.
#include "tests/lifecycle/child_processes.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "gtest/gtest.h"

namespace backendlab::test_util {
namespace {

TEST(ChildProcessesTest, FindsAChildByParentWithItsNameAndLosesItOnceReaped) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    prctl(PR_SET_NAME, "a) b (c", 0, 0, 0);
    const char byte = 1;
    (void)!write(ready[1], &byte, 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);

  const std::vector<pid_t> children = ChildrenOf(getpid());
  EXPECT_NE(std::find(children.begin(), children.end(), child), children.end());
  const std::optional<ProcessStat> stat = ReadProcessStat(std::to_string(child).c_str());
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->pid, child);
  EXPECT_EQ(stat->comm, "a) b (c");
  EXPECT_EQ(stat->ppid, getpid());
  EXPECT_EQ(stat->pgrp, getpgrp());

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(ReadProcessStat(std::to_string(child).c_str()).has_value()) << "reaped: its entry is gone";
  const std::vector<pid_t> after = ChildrenOf(getpid());
  EXPECT_EQ(std::find(after.begin(), after.end(), child), after.end());
}

}  // namespace
}  // namespace backendlab::test_util
