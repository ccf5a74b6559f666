// An epoll wait event set of up to three members (latch, postmaster death,
// socket), as PostgreSQL's epoll WaitEventSet: CreateWaitEventSet,
// AddWaitEventToSet, ModifyWaitEvent, WaitEventSetWaitBlock, FreeWaitEventSet.
#ifndef BACKENDLAB_WAITS_INTERNAL_EPOLL_SET_H_
#define BACKENDLAB_WAITS_INTERNAL_EPOLL_SET_H_

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "base/check.h"
#include "base/resource_usage.h"
#include "base/unique_fd.h"
#include "waits/internal/wait_protocol.h"
#include "waits/latch.h"

namespace backendlab::waits::internal {

class EpollSet {
 public:
  // epoll_create1(EPOLL_CLOEXEC): one system call. Invalid (valid() false,
  // errno set) if the kernel refuses.
  static EpollSet Create() {
    EpollSet set;
    set.fd_.Reset(epoll_create1(EPOLL_CLOEXEC));
    return set;
  }

  EpollSet() = default;
  EpollSet(EpollSet&&) noexcept = default;
  EpollSet& operator=(EpollSet&&) noexcept = default;

  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }

  // epoll_ctl(EPOLL_CTL_ADD): one system call. 0, or the errno (EEXIST for
  // a descriptor the set already holds).
  int Add(Member member, int fd, uint32_t socket_events = 0) {
    epoll_event ev{};
    ev.events = EpollBits(member, socket_events);
    ev.data.u64 = static_cast<uint64_t>(member) << 32 | static_cast<uint32_t>(fd);
    if (member == Member::kSocket) socket_events_ = socket_events;
    return epoll_ctl(fd_.get(), EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : errno;
  }

  // ModifyWaitEvent for the socket: no system call when the events are
  // those already set (the case PostgreSQL's comment calls important),
  // else epoll_ctl(EPOLL_CTL_MOD). 0, or the errno.
  int ModifySocket(int socket, uint32_t socket_events) {
    if (socket_events == socket_events_) return 0;
    epoll_event ev{};
    ev.events = EpollBits(Member::kSocket, socket_events);
    ev.data.u64 = static_cast<uint64_t>(Member::kSocket) << 32 | static_cast<uint32_t>(socket);
    if (epoll_ctl(fd_.get(), EPOLL_CTL_MOD, socket, &ev) != 0) return errno;
    socket_events_ = socket_events;
    return 0;
  }

  // One epoll_wait for one event (WaitLatchOrSocket asks for one): the
  // events it brought, kTimedOut, or 0 (EINTR, a stale latch wake-up, a
  // false alarm). Any other failure of epoll_wait is a broken invariant
  // (EBADF, EINVAL: the set is ours).
  template <WaitSetLatch L>
  int64_t WaitBlock(L& latch, int timeout_ms) {
    epoll_event ev;
    const int rc = epoll_wait(fd_.get(), &ev, 1, timeout_ms);
    if (rc < 0) {
      BACKENDLAB_CHECK(errno == EINTR);
      return 0;
    }
    if (rc == 0) return kTimedOut;
    const auto member = static_cast<Member>(ev.data.u64 >> 32);
    const int fd = static_cast<int>(static_cast<uint32_t>(ev.data.u64));
    return MemberEvents(latch, member, fd, (ev.events & EPOLLIN) != 0, (ev.events & EPOLLOUT) != 0,
                        (ev.events & (EPOLLERR | EPOLLHUP)) != 0, socket_events_);
  }

  // FreeWaitEventSet: close(), one system call; its wall time added to
  // *close_ns if given (what the 2018 WaitLatchOrSocket thread found
  // expensive).
  void Close(int64_t* close_ns = nullptr) {
    if (!fd_.valid()) return;
    if (close_ns == nullptr) {
      fd_.Reset();
      return;
    }
    const int64_t start = NowNs();
    fd_.Reset();
    *close_ns += NowNs() - start;
  }

 private:
  UniqueFd fd_;
  uint32_t socket_events_ = 0;
};

// PostgreSQL's WaitLatchOrSocket on a fresh set (what it does to this day):
// create, add the latch, postmaster death (if watched) and the socket (if
// any), wait, free. 5 system calls plus one epoll_wait unless the latch was
// already set; `close_ns` as EpollSet::Close. Returns the events, or
// kWaitFailed with errno set if the kernel refused the set (EMFILE, ENOMEM).
template <WaitSetLatch L>
uint32_t WaitOnFreshEpollSet(L& latch, int death_fd, int socket, uint32_t socket_events, int64_t timeout_ms,
                             int64_t* close_ns = nullptr) {
  EpollSet set = EpollSet::Create();
  if (!set.valid()) return kWaitFailed;
  int err = set.Add(Member::kLatch, latch.fd());
  if (err == 0 && death_fd >= 0) err = set.Add(Member::kPostmasterDeath, death_fd);
  if (err == 0 && socket >= 0) err = set.Add(Member::kSocket, socket, socket_events);
  if (err != 0) {
    errno = err;
    return kWaitFailed;
  }
  const uint32_t events = WaitEventSetWait(latch, timeout_ms, [&](int t) { return set.WaitBlock(latch, t); });
  set.Close(close_ns);
  return events;
}

}  // namespace backendlab::waits::internal

#endif  // BACKENDLAB_WAITS_INTERNAL_EPOLL_SET_H_
