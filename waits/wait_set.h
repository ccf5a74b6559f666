// How a backend waits for its socket and its latch: four wait event set
// strategies behind one concept, one file each (per_call_wait.h,
// long_lived_wait.h, cached_wait.h, poll_wait.h). Every set holds the
// process's latch, the postmaster-death pipe and the socket, as
// PostgreSQL's do; they differ in what a wait costs in system calls.
#ifndef BACKENDLAB_WAITS_WAIT_SET_H_
#define BACKENDLAB_WAITS_WAIT_SET_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "base/names.h"
#include "waits/latch.h"

namespace backendlab::waits {

enum class WaitStrategy { kPerCall, kLongLived, kCached, kPoll };
inline constexpr NamedValue<WaitStrategy> kWaitStrategyNames[] = {
    {WaitStrategy::kPerCall, "per-call"},
    {WaitStrategy::kLongLived, "long-lived"},
    {WaitStrategy::kCached, "cached"},
    {WaitStrategy::kPoll, "poll"},
};
inline constexpr auto kAllWaitStrategies = ValuesOf(kWaitStrategyNames);
inline std::string_view WaitStrategyName(WaitStrategy s) { return NameOf(s, kWaitStrategyNames); }
inline absl::StatusOr<WaitStrategy> ParseWaitStrategy(std::string_view name) {
  return ParseName(name, kWaitStrategyNames, "wait strategy");
}

// What a Receive() got: bytes > 0; 0 at EOF; -1 with `error` (an errno), or
// with postmaster_died.
struct Received {
  ssize_t bytes = 0;
  int error = 0;
  bool postmaster_died = false;
};

// A wait strategy S over a WaitSetLatch L:
//   S::Create(latch, death_fd, socket)  per process, once: what the set
//                                       needs before the first wait (only
//                                       `long-lived` makes a set here)
//   set.WaitOrSocket(socket, events, timeout_ms)
//                                       one WaitLatchOrSocket: the latch,
//                                       postmaster death and `events` on
//                                       the socket (kSocketReadable,
//                                       kSocketWritable)
//   set.Receive(socket, buf, len)       a read as the strategy's callers do
//                                       it: `long-lived` tries the read
//                                       first and waits only on EAGAIN
//                                       (secure_read); the others wait
//                                       first, then read (postgres_fdw's
//                                       pgfdw_get_result). A set latch is
//                                       reset and the wait resumed.
//   set.waits()                         WaitOrSocket calls so far
//   set.close_ns()                      wall time spent in close() of sets
template <typename S>
concept WaitSet = std::movable<S> && requires(S& set, int socket, uint32_t events, int64_t timeout_ms, char* buf,
                                              size_t len) {
  { S::kStrategy } -> std::convertible_to<WaitStrategy>;
  { set.WaitOrSocket(socket, events, timeout_ms) } -> std::same_as<uint32_t>;
  { set.Receive(socket, buf, len) } -> std::same_as<Received>;
  { set.waits() } -> std::same_as<int64_t>;
  { set.close_ns() } -> std::same_as<int64_t>;
};

namespace internal {

// Receive() for every strategy: with read_first, recv() before any wait;
// otherwise a wait first. recv() with MSG_DONTWAIT stands for PostgreSQL's
// non-blocking socket (one recvfrom either way).
template <typename Set, typename L>
Received ReceiveWaiting(Set& set, L& latch, int socket, char* buf, size_t len, bool read_first) {
  bool try_read = read_first;
  for (;;) {
    if (try_read) {
      const ssize_t n = recv(socket, buf, len, MSG_DONTWAIT);
      if (n >= 0) return {n, 0, false};
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return {-1, errno, false};
    }
    const uint32_t events = set.WaitOrSocket(socket, kSocketReadable, -1);
    if (events & kWaitFailed) return {-1, errno, false};
    if (events & kPostmasterDeath) return {-1, 0, true};
    if (events & kLatchSet) latch.Reset();  // where a backend would process its interrupts
    try_read = (events & kSocketReadable) != 0;
  }
}

}  // namespace internal

// Sends all of buf, waiting for the socket to be writable through `set`
// when the kernel's buffer is full (never, for the small messages of the
// experiments; here so that a full buffer is waited out, not an error).
// 0, or an errno; -1 for postmaster death.
template <WaitSet S>
int SendAll(S& set, int socket, const char* buf, size_t len) {
  while (len > 0) {
    const ssize_t n = send(socket, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      buf += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return errno;
    const uint32_t events = set.WaitOrSocket(socket, kSocketWritable, -1);
    if (events & kWaitFailed) return errno;
    if (events & kPostmasterDeath) return -1;
  }
  return 0;
}

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_WAIT_SET_H_
