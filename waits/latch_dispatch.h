// The one place a LatchKind chosen at run time becomes a type: everything
// after it is templated over the Latch concept (no virtual call per wait).
#ifndef BACKENDLAB_WAITS_LATCH_DISPATCH_H_
#define BACKENDLAB_WAITS_LATCH_DISPATCH_H_

#include "waits/eventfd_epoll_latch.h"
#include "waits/futex_latch.h"
#include "waits/latch.h"
#include "waits/selfpipe_poll_latch.h"
#include "waits/selfpipe_select_latch.h"
#include "waits/semaphore_latch.h"
#include "waits/signalfd_epoll_latch.h"

namespace backendlab::waits {

static_assert(Latch<SelfpipeSelectLatch> && SocketLatch<SelfpipeSelectLatch>);
static_assert(Latch<SelfpipePollLatch> && SocketLatch<SelfpipePollLatch>);
static_assert(WaitSetLatch<SignalfdEpollLatch> && SocketLatch<SignalfdEpollLatch>);
static_assert(WaitSetLatch<EventfdEpollLatch> && SocketLatch<EventfdEpollLatch>);
static_assert(Latch<SemaphoreLatch> && !SocketLatch<SemaphoreLatch>,
              "a process asleep in sem_wait watches no descriptor: no WaitLatchOrSocket");
static_assert(Latch<FutexLatch> && !SocketLatch<FutexLatch>,
              "a process asleep in FUTEX_WAIT watches no descriptor: no WaitLatchOrSocket");

// Calls fn.template operator()<L>() for the latch type of `kind` and
// returns what it returns.
template <typename Fn>
decltype(auto) WithLatch(LatchKind kind, Fn&& fn) {
  switch (kind) {
    case LatchKind::kSelfpipeSelect:
      return fn.template operator()<SelfpipeSelectLatch>();
    case LatchKind::kSelfpipePoll:
      return fn.template operator()<SelfpipePollLatch>();
    case LatchKind::kSignalfdEpoll:
      return fn.template operator()<SignalfdEpollLatch>();
    case LatchKind::kSemaphore:
      return fn.template operator()<SemaphoreLatch>();
    case LatchKind::kEventfdEpoll:
      return fn.template operator()<EventfdEpollLatch>();
    case LatchKind::kFutex:
      break;
  }
  return fn.template operator()<FutexLatch>();
}

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_LATCH_DISPATCH_H_
