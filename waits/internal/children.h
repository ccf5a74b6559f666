// The processes an experiment forks, and what each reports back through
// shared memory. Every child dies with the tool (PR_SET_PDEATHSIG), leaves
// stopping to the tool (the stop signals ignored: the tool tells it when),
// and is reaped on every path.
#ifndef BACKENDLAB_WAITS_INTERNAL_CHILDREN_H_
#define BACKENDLAB_WAITS_INTERNAL_CHILDREN_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace backendlab::waits::internal {

// The most system-call kinds a child counts.
inline constexpr int kMaxSyscallKinds = 16;

// What one child writes for the tool, in shared memory. Plain integers and
// a message: nothing that points into the child.
struct ChildReport {
  char error[256] = {};                // set by Fail(): why the child gave up
  int64_t round_trips = 0;             // all it made or served, warm-up included
  int64_t measured_round_trips = 0;    // those completed while the tool measured
  int64_t user_ns = 0, sys_ns = 0;     // CPU over its whole loop
  int64_t waits = 0;                   // WaitOrSocket calls
  int64_t close_ns = 0;                // wall time in close() of wait sets
  int64_t calls = 0, call_ns = 0;      // a timed operation (SetLatch on a busy owner): count, total ns
  int64_t syscalls_total = -1;         // counting pass: every call in its loop; -1 not counted
  int64_t syscalls[kMaxSyscallKinds] = {};

  // Records `message` (cut to fit) for the tool: the child then exits 1.
  void Fail(const std::string& message);
};

// The child's CPU so far (getrusage), for ChildReport's user_ns/sys_ns.
struct CpuTimes {
  int64_t user_ns = 0, sys_ns = 0;
};
CpuTimes OwnCpuTimes();

// Pins the calling process to `cpu` (sched_setaffinity); -1 leaves it where it is.
absl::Status PinToCpu(int cpu);

class Children {
 public:
  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  // Kills (SIGKILL) and reaps any child still there.
  ~Children();

  // Forks a child that runs body() and _exits with what it returns (0: all
  // went well). In the child, before body(): PR_SET_PDEATHSIG(SIGKILL) (and
  // an exit at once if the tool is already gone), the stop signals ignored.
  absl::Status Start(absl::FunctionRef<int()> body);

  // Waits for every child to exit. A stop request (^C) while it waits calls
  // `on_stop` once, which should tell the children to end. A child still
  // running `timeout_ms` after the call, or after on_stop, is killed. OK if
  // each exited 0; otherwise an error naming the first that did not (its
  // report's message if `reports` has one, else how it ended):
  // "<what> <index>: <why>".
  absl::Status ReapAll(int64_t timeout_ms, const std::string& what, std::span<const ChildReport> reports = {},
                       const std::function<void()>& on_stop = nullptr);

  size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_CHILDREN_H_
