// The one place a WaitStrategy chosen at run time becomes a type.
#ifndef BACKENDLAB_WAITS_WAIT_DISPATCH_H_
#define BACKENDLAB_WAITS_WAIT_DISPATCH_H_

#include "waits/cached_wait.h"
#include "waits/latch.h"
#include "waits/long_lived_wait.h"
#include "waits/per_call_wait.h"
#include "waits/poll_wait.h"
#include "waits/wait_set.h"

namespace backendlab::waits {

// Calls fn.template operator()<S>() with S the strategy's set over latch L.
template <WaitSetLatch L, typename Fn>
decltype(auto) WithWaitStrategy(WaitStrategy strategy, Fn&& fn) {
  static_assert(WaitSet<PerCallWait<L>> && WaitSet<LongLivedWait<L>> && WaitSet<CachedWait<L>> &&
                WaitSet<PollWait<L>>);
  switch (strategy) {
    case WaitStrategy::kPerCall:
      return fn.template operator()<PerCallWait<L>>();
    case WaitStrategy::kLongLived:
      return fn.template operator()<LongLivedWait<L>>();
    case WaitStrategy::kCached:
      return fn.template operator()<CachedWait<L>>();
    case WaitStrategy::kPoll:
      break;
  }
  return fn.template operator()<PollWait<L>>();
}

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_WAIT_DISPATCH_H_
