// `cached`: the patch of the 2018 WaitLatchOrSocket thread (never
// committed; docs/sources.md). WaitLatchOrSocket keeps its sets in a static
// 113-entry cache keyed on (events, socket); a hit re-adds the socket,
// ignoring EEXIST (the same socket still registered), in case the
// descriptor was closed and its number reused, then waits: 2 system calls
// per wait. The hazard Andres Freund objected to ("the lifetime of sockets
// will make this an absolute mess"), shown in the tests: epoll keys a
// registration on the open file and the number together, and drops it only
// when the file's last descriptor closes. A socket closed while another
// descriptor still refers to its file (a dup, a forked child's copy) stays
// registered under its old number; the new socket that takes the number is
// added beside it, and the set goes on reporting the old file's events as
// the new socket's — an old EOF is readable for ever, so every wait returns
// at once for a socket with nothing to read: a backend that spins.
#ifndef BACKENDLAB_WAITS_CACHED_WAIT_H_
#define BACKENDLAB_WAITS_CACHED_WAIT_H_

#include <sys/epoll.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "waits/internal/epoll_set.h"
#include "waits/internal/wait_protocol.h"
#include "waits/latch.h"
#include "waits/wait_set.h"

namespace backendlab::waits {

template <WaitSetLatch L>
class CachedWait {
 public:
  static constexpr WaitStrategy kStrategy = WaitStrategy::kCached;
  static constexpr size_t kEntries = 113;  // WAIT_EVENT_HASH_SIZE of the patch

  static absl::StatusOr<CachedWait> Create(L& latch, int death_fd, int /*socket*/) {
    return CachedWait(latch, death_fd);
  }

  CachedWait(CachedWait&&) noexcept = default;
  CachedWait& operator=(CachedWait&&) noexcept = default;

  uint32_t WaitOrSocket(int socket, uint32_t events, int64_t timeout_ms) {
    ++waits_;
    // The patch's hash: (wakeEvents | sock << 6) % 113.
    Entry& e = entries_[(static_cast<size_t>(events) | static_cast<size_t>(socket) << 6) % kEntries];
    if (!e.set.valid() || e.events != events || e.socket != socket) {
      e.set.Close(&close_ns_);
      e.set = internal::EpollSet::Create();
      e.events = events;
      e.socket = socket;
      int err = e.set.valid() ? e.set.Add(internal::Member::kLatch, latch_->fd()) : errno;
      if (err == 0 && death_fd_ >= 0) err = e.set.Add(internal::Member::kPostmasterDeath, death_fd_);
      if (err == 0) err = e.set.Add(internal::Member::kSocket, socket, events);
      if (err != 0) {
        e.set.Close(&close_ns_);
        errno = err;
        return kWaitFailed;
      }
    } else if (const int err = e.set.Add(internal::Member::kSocket, socket, events); err != 0 && err != EEXIST) {
      errno = err;
      return kWaitFailed;
    }
    return internal::WaitEventSetWait(*latch_, timeout_ms, [&](int t) { return e.set.WaitBlock(*latch_, t); });
  }
  Received Receive(int socket, char* buf, size_t len) {
    return internal::ReceiveWaiting(*this, *latch_, socket, buf, len, /*read_first=*/false);
  }
  int64_t waits() const { return waits_; }
  int64_t close_ns() const { return close_ns_; }

 private:
  struct Entry {
    internal::EpollSet set;
    uint32_t events = 0;
    int socket = -1;
  };

  CachedWait(L& latch, int death_fd) : latch_(&latch), death_fd_(death_fd) {}

  L* latch_;
  int death_fd_;
  std::array<Entry, kEntries> entries_;
  int64_t waits_ = 0;
  int64_t close_ns_ = 0;
};

}  // namespace backendlab::waits

#endif  // BACKENDLAB_WAITS_CACHED_WAIT_H_
