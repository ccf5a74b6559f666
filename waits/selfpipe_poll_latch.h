// `selfpipe-poll`: 2010's self-pipe latch with poll() instead of select(),
// as Heikki Linnakangas asked in the thread (10.5 µs per ping-pong against
// select()'s 15). Everything else as `selfpipe-select`: a signal for every
// SetLatch, a handler, a pipe drained on every turn.
#ifndef BACKENDLAB_WAITS_SELFPIPE_POLL_LATCH_H_
#define BACKENDLAB_WAITS_SELFPIPE_POLL_LATCH_H_

#include <cstdint>

#include "waits/internal/self_pipe_latch.h"
#include "waits/latch.h"

namespace backendlab::waits {

class SelfpipePollLatch : public internal::SelfPipeLatch<SelfpipePollLatch> {
 public:
  static constexpr LatchKind kKind = LatchKind::kSelfpipePoll;

  SelfpipePollLatch(SelfpipePollLatch&&) noexcept = default;
  SelfpipePollLatch& operator=(SelfpipePollLatch&&) noexcept = default;

  // One poll() on the pipe and the socket. poll() does not report the time
  // left, so a wait with a timeout recomputes it from the clock (as the 2016
  // code did).
  int64_t Block(int pipe_fd, int socket, uint32_t events, internal::SleepTimeout& timeout);

 private:
  friend class internal::SelfPipeLatch<SelfpipePollLatch>;
  SelfpipePollLatch() = default;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_SELFPIPE_POLL_LATCH_H_
