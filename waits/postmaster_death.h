// The pipe by which a backend learns that its postmaster died (PostgreSQL's
// postmaster_alive_fds): the postmaster keeps the write end and never
// writes; every child closes it at once and watches the read end, which
// reports EOF once the postmaster is gone. Every wait event set and every
// latch that waits on descriptors watches it.
#ifndef BACKENDLAB_WAITS_POSTMASTER_DEATH_H_
#define BACKENDLAB_WAITS_POSTMASTER_DEATH_H_

#include "absl/status/statusor.h"
#include "base/unique_fd.h"

namespace backendlab::waits {

class PostmasterDeathPipe {
 public:
  // In the postmaster, before it forks: pipe(), the read end non-blocking
  // (as PostgreSQL's), both close-on-exec.
  static absl::StatusOr<PostmasterDeathPipe> Create();

  // In a child, first thing after fork: drop the postmaster's end, so that
  // the read end reaches EOF when the postmaster exits.
  void CloseOwnEnd() { own_.Reset(); }

  // The descriptor to watch for readability.
  int watch_fd() const { return watch_.get(); }
  // The postmaster's end, for a child that is not this one's to close
  // (-1 once closed).
  int own_fd() const { return own_.get(); }

  // PostmasterIsAliveInternal: a 1-byte read of the watch end; EAGAIN means
  // alive, EOF dead. One read() system call.
  bool PostmasterAlive() const;

 private:
  UniqueFd watch_;
  UniqueFd own_;
};

// PostmasterAlive() on a bare watch descriptor (what a wait set holds).
bool PostmasterAliveOn(int watch_fd);

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_POSTMASTER_DEATH_H_
