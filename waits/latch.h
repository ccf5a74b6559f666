// A latch: PostgreSQL's way for one process to wake another (SetLatch,
// ResetLatch, WaitLatch, WaitLatchOrSocket), as one C++20 concept with one
// file per implementation compared: selfpipe_select_latch.h, …, futex_latch.h.
#ifndef BACKENDLAB_WAITS_LATCH_H_
#define BACKENDLAB_WAITS_LATCH_H_

#include <sys/types.h>

#include <atomic>
#include <concepts>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/names.h"

namespace backendlab::waits {

// What a wait returned, as a bit mask: PostgreSQL's WL_* flags.
enum WaitEvent : uint32_t {
  kLatchSet = 1u << 0,          // WL_LATCH_SET
  kSocketReadable = 1u << 1,    // WL_SOCKET_READABLE (EOF and errors count as readable)
  kSocketWritable = 1u << 2,    // WL_SOCKET_WRITEABLE
  kTimeout = 1u << 3,           // WL_TIMEOUT
  kPostmasterDeath = 1u << 4,   // WL_POSTMASTER_DEATH
  // Not PostgreSQL's (it raises an ERROR): the kernel refused a set or a
  // descriptor (EMFILE, ENOMEM); errno says why.
  kWaitFailed = 1u << 31,
};

// The implementations, in the order reports list them: 2010's, today's, and
// the ones PostgreSQL never used.
enum class LatchKind { kSelfpipeSelect, kSelfpipePoll, kSignalfdEpoll, kSemaphore, kEventfdEpoll, kFutex };
inline constexpr NamedValue<LatchKind> kLatchNames[] = {
    {LatchKind::kSelfpipeSelect, "selfpipe-select"},
    {LatchKind::kSelfpipePoll, "selfpipe-poll"},
    {LatchKind::kSignalfdEpoll, "signalfd-epoll"},
    {LatchKind::kSemaphore, "semaphore"},
    {LatchKind::kEventfdEpoll, "eventfd-epoll"},
    {LatchKind::kFutex, "futex"},
};
inline constexpr auto kAllLatches = ValuesOf(kLatchNames);
inline std::string_view LatchName(LatchKind kind) { return NameOf(kind, kLatchNames); }
inline absl::StatusOr<LatchKind> ParseLatch(std::string_view name) { return ParseName(name, kLatchNames, "latch"); }

// What every implementation keeps in shared memory: PostgreSQL's struct
// Latch. 32-bit words so that the futex implementation can sleep on is_set.
struct LatchState {
  std::atomic<int32_t> is_set{0};
  // PostgreSQL >= 14: the owner is, or is about to be, asleep; a SetLatch
  // that finds it clear sends no wake-up. Implementations without it (2010's)
  // leave it 0.
  std::atomic<int32_t> maybe_sleeping{0};
  std::atomic<pid_t> owner_pid{0};
};
static_assert(std::atomic<int32_t>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free,
              "SetLatch runs in signal handlers and in other processes: its words must be lock-free");

// PostgreSQL's pg_memory_barrier(): a full fence, so that a store before it
// is visible before a load after it (SetLatch's is_set against the owner's
// maybe_sleeping, and the owner's ResetLatch against the flags it then reads).
inline void FullBarrier() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// A latch implementation L:
//   L::Shared               lives in memory shared by every process that sets
//                           or owns the latch (a MAP_SHARED mapping made
//                           before fork); L::InitShared(shared) prepares it,
//                           once, before any fork, and L::DestroyShared(shared)
//                           releases what it made (a descriptor, a
//                           semaphore) once no process uses it any more.
//   L::Own(shared, death)   makes the calling process the owner (OwnLatch,
//                           and what InitializeLatchSupport does for it);
//                           `death` is the read end of the postmaster-death
//                           pipe to watch while waiting, or -1. At most one
//                           latch of a kind that keeps process-wide state
//                           (a signal handler, a blocked signal) per process.
//   L::Set(shared)          SetLatch, from any process, and from a signal
//                           handler: async-signal-safe, allocates nothing.
//   latch.Reset()           ResetLatch: the owner only.
//   latch.Wait(timeout_ms)  WaitLatch(WL_LATCH_SET | WL_TIMEOUT, plus
//                           WL_POSTMASTER_DEATH where the implementation can
//                           watch the pipe): kLatchSet, kTimeout or
//                           kPostmasterDeath; timeout_ms < 0 waits for ever.
//                           May return kLatchSet spuriously once for a set
//                           already consumed; callers loop (invariant 2).
//   L::kKind, L::kWaitsOnSocket, L::kWatchesPostmasterDeath: what it is and can.
template <typename L>
concept Latch = std::movable<L> && requires(L& latch, typename L::Shared& shared, int death_fd, int64_t timeout_ms) {
  { L::kKind } -> std::convertible_to<LatchKind>;
  { L::kWaitsOnSocket } -> std::convertible_to<bool>;
  { L::kWatchesPostmasterDeath } -> std::convertible_to<bool>;
  { L::InitShared(shared) } -> std::same_as<absl::Status>;
  { L::DestroyShared(shared) } noexcept;
  { L::Own(shared, death_fd) } -> std::same_as<absl::StatusOr<L>>;
  { L::Set(shared) } noexcept;
  { latch.Reset() } noexcept;
  { latch.Wait(timeout_ms) } -> std::same_as<uint32_t>;
};

// A latch that can also wait on a socket (WaitLatchOrSocket). `events` is
// kSocketReadable and/or kSocketWritable; the result may hold kLatchSet, the
// socket's bits, kTimeout or kPostmasterDeath. `semaphore` and `futex` cannot:
// a process asleep in sem_wait or FUTEX_WAIT watches no descriptor, which is
// why the 2010 latch thread's fastest latch was not PostgreSQL's.
template <typename L>
concept SocketLatch = Latch<L> && L::kWaitsOnSocket &&
                      requires(L& latch, int socket, uint32_t events, int64_t timeout_ms) {
                        { latch.WaitOrSocket(socket, events, timeout_ms) } -> std::same_as<uint32_t>;
                      };

// A latch a wait event set can hold (PostgreSQL >= 14's protocol): a
// descriptor that becomes readable when the latch is set for a sleeping
// owner, and the maybe_sleeping handshake around the sleep.
//   latch.fd()               the descriptor to watch (signalfd, eventfd)
//   latch.IsSet()            is_set, read by the owner
//   latch.PrepareToSleep()   maybe_sleeping = 1, barrier: the caller then
//                            rechecks IsSet() before it blocks
//   latch.FinishSleep()      maybe_sleeping = 0
//   latch.Drain()            consumes what made fd() readable
//   latch.SetWaiting(bool)   PostgreSQL's `waiting` (a SetLatch of its own
//                            latch from a signal handler wakes the process
//                            only while it is set)
template <typename L>
concept WaitSetLatch = Latch<L> && requires(L& latch, const L& c, bool waiting) {
  { c.fd() } -> std::same_as<int>;
  { c.IsSet() } -> std::same_as<bool>;
  { latch.PrepareToSleep() } noexcept;
  { latch.FinishSleep() } noexcept;
  { latch.Drain() } noexcept;
  { latch.SetWaiting(waiting) } noexcept;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_LATCH_H_
