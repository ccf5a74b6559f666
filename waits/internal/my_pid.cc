// MyProcPid: a cached getpid(), refreshed after fork.
#include "waits/internal/my_pid.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace backendlab::waits::internal {
namespace {

std::atomic<pid_t> g_pid{0};

void RefreshInChild() { g_pid.store(getpid(), std::memory_order_relaxed); }

// Registered before main(): every fork() of the process, whoever calls it,
// runs the handler in the child before fork() returns there.
const bool g_registered = [] {
  g_pid.store(getpid(), std::memory_order_relaxed);
  return pthread_atfork(nullptr, nullptr, &RefreshInChild) == 0;
}();

}  // namespace

pid_t MyProcPid() {
  const pid_t pid = g_pid.load(std::memory_order_relaxed);
  return pid != 0 && g_registered ? pid : getpid();
}

}  // namespace backendlab::waits::internal
