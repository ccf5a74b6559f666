// `selfpipe-select`: the latch of PostgreSQL 9.1 as first committed (2010):
// SetLatch sends SIGUSR1 to the owner whether it waits or not, the owner's
// handler writes a byte to its self-pipe while it waits, and the wait sleeps
// in select() on the pipe (and a socket), its fd_sets rebuilt on every turn.
// The 2010 latch thread measured it at 15 µs per ping-pong. Like 2010's, it
// watches no postmaster-death pipe.
#ifndef BACKENDLAB_WAITS_SELFPIPE_SELECT_LATCH_H_
#define BACKENDLAB_WAITS_SELFPIPE_SELECT_LATCH_H_

#include <cstdint>

#include "waits/internal/self_pipe_latch.h"
#include "waits/latch.h"

namespace backendlab::waits {

class SelfpipeSelectLatch : public internal::SelfPipeLatch<SelfpipeSelectLatch> {
 public:
  static constexpr LatchKind kKind = LatchKind::kSelfpipeSelect;

  SelfpipeSelectLatch(SelfpipeSelectLatch&&) noexcept = default;
  SelfpipeSelectLatch& operator=(SelfpipeSelectLatch&&) noexcept = default;

  // One select(): the pipe for reading, the socket for `events`; FD_ZERO and
  // FD_SET on every call, as 2010's loop did.
  int64_t Block(int pipe_fd, int socket, uint32_t events, internal::SleepTimeout& timeout);

 private:
  friend class internal::SelfPipeLatch<SelfpipeSelectLatch>;
  SelfpipeSelectLatch() = default;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_SELFPIPE_SELECT_LATCH_H_
