// The postmaster's backend processes, forked per connection or pre-forked:
// which slot each pid serves, reaped by waitpid(-1) in a loop or each by its
// pidfd. Shared by forked_backends.cc and pooled_backends.cc. Not for other
// modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_CHILDREN_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_CHILDREN_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <map>
#include <vector>

#include "absl/functional/function_ref.h"

namespace backendlab::lifecycle::internal {

class Children {
 public:
  // by_pidfd: reap each child by its pidfd (CycleOptions::reap), watched
  // with Watch; nslots: how many slots a child may serve.
  Children(bool by_pidfd, size_t nslots);
  ~Children();
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;

  void Add(pid_t pid, size_t slot) { live_[pid] = slot; }
  // Reaping by pidfd: watches pid's pidfd; 0, or the errno that stopped it,
  // after which waitpid(-1) reaps what is left (Linux < 5.3 has no
  // pidfd_open; or out of descriptors). 0 when not reaping by pidfd.
  int Watch(pid_t pid, size_t slot);
  // Reaps every child that has exited: `reaped` for each, with its slot,
  // wait status and rusage. A wait that finds no child at all (ECHILD:
  // reaped elsewhere) gives up every slot left to `lost`.
  void Reap(absl::FunctionRef<void(pid_t pid, size_t slot, int status, const rusage& usage)> reaped,
            absl::FunctionRef<void(size_t slot)> lost);
  // pid was waited for by its caller.
  void Forget(pid_t pid);
  // SIGKILL to each; and, KillAndWait, waits for each.
  void KillEach() const;
  void KillAndWait();
  size_t size() const { return live_.size(); }

 private:
  void ReapByPidfd(absl::FunctionRef<void(pid_t, size_t, int, const rusage&)> reaped);
  void Reaped(pid_t pid, int status, const rusage& usage, absl::FunctionRef<void(pid_t, size_t, int, const rusage&)> reaped);

  std::map<pid_t, size_t> live_;  // pid -> slot
  // Reaping by pidfd: the epoll set of the live children's pidfds, and each
  // slot's pidfd (-1: none). by_pidfd_ is cleared if a pidfd could not be
  // watched: then waitpid(-1) reaps what is left.
  bool by_pidfd_ = false;
  int epoll_ = -1;
  std::vector<int> pidfds_;
};

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_CHILDREN_H_
