// What the processes of a fork-mode run say to each other. Not for other
// modules.
//
// postmaster -> client, on the accepted connection: the connection's
//   sequence number (8 bytes, before the backend is forked), so that the
//   client and the postmaster agree on which connections are warm-up;
// backend -> client: kReadyByte; client -> backend: kTerminateByte (or EOF);
// postmaster -> a pre-forked backend, on its channel (a SOCK_SEQPACKET
//   pair): the connection's slot (8 bytes) with its descriptor (SCM_RIGHTS);
//   backend -> postmaster: kPoolReady once built, then kPoolDone (or
//   kPoolError) after each connection's reset; EOF: exit;
// postmaster -> tool, on the results pipe: Messages;
// tool -> postmaster, on the control pipe: with held connections one
//   kUsageByte (send the server's usage once only held backends live), then
//   EOF (stop).
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_PROTOCOL_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_PROTOCOL_H_

#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/names.h"
#include "lifecycle/backend_record.h"

namespace backendlab::lifecycle::internal {

// The one warm-up rule: the first `warmup` connections the postmaster accepts
// (sequence numbers 0 .. warmup-1) are warm-up, whichever client made them.
inline bool IsWarmup(int64_t sequence, int64_t warmup) { return sequence < warmup; }

inline constexpr char kUsageByte = 'U';
inline constexpr char kPoolReady = 'R';
inline constexpr char kPoolDone = 'D';
inline constexpr char kPoolError = 'E';

// A call of the postmaster's that failed for good and ended the run.
// kPoolStart: a pre-forked backend died before it was built (value 0; it
// printed why). kMemberStopped: a busy pre-forked backend stayed stopped
// (SIGSTOP) kStoppedMemberNs and was killed (value: its index in the pool;
// record: its connection's, with its pid).
enum class FailedCall : int32_t {
  kPoll = 1,
  kAccept = 2,
  kFork = 3,
  kThread = 4,
  kSocketpair = 5,
  kPoolStart = 6,
  kPidfd = 7,
  kMemberStopped = 8,
};

inline constexpr NamedValue<FailedCall> kFailedCallNames[] = {{FailedCall::kPoll, "poll"},
                                                              {FailedCall::kAccept, "accept"},
                                                              {FailedCall::kFork, "fork"},
                                                              {FailedCall::kThread, "pthread_create"},
                                                              {FailedCall::kSocketpair, "socketpair"},
                                                              {FailedCall::kPoolStart, "pre-forked backend start"},
                                                              {FailedCall::kPidfd, "pidfd_open"},
                                                              {FailedCall::kMemberStopped, "pre-forked backend stopped"}};

// How long a pre-forked backend with a connection handed to it may stay
// stopped before the postmaster kills it and fails the run naming it:
// generous beside a connection's milliseconds, as the latch experiment's
// 10 s for a hung pass (waits/latch_experiment.cc). Its client, and the
// run, would otherwise wait for ever.
inline constexpr int64_t kStoppedMemberNs = 10'000'000'000;
inline std::string_view FailedCallName(FailedCall call) { return NameOf(call, kFailedCallNames); }

// Messages from the postmaster to the tool, one write() each (< PIPE_BUF, so
// never interleaved or torn).
struct Message {
  enum Type : int32_t {
    kBackend = 1,       // record: a reaped backend, complete
    kBaselineFork = 2,  // value: ns of one bare fork+exit+wait
    kSamplesLost = 3,   // value: samples the postmaster could not write
    kFailed = 4,        // call and value (errno): the run ends
    kServerUsage = 5,   // usage: the postmaster and its reaped children over the connections, bare forks left out
    kReplaced = 6,      // value: the pid of a pre-forked backend that died and was replaced
    kPoolOutside = 7,   // value: a pool's CPU (ns) left out of kServerUsage: its build and end (CycleResult::pool_outside_cpu_ns)
  } type;
  FailedCall call = FailedCall::kPoll;
  int64_t value = 0;
  struct Usage {
    int64_t user_ns, system_ns, minor_faults, major_faults, context_switches;
    int64_t postmaster_ns;  // of the above, the postmaster's own CPU
  } usage{};
  BackendRecord record;
};
static_assert(sizeof(Message) <= PIPE_BUF, "a message must be written atomically");

// "<call>: <strerror> (<ENAME>)": the one line a failed call ends a run with.
inline std::string ErrnoLine(std::string_view call, int error) {
  const char* name = strerrorname_np(error);
  std::string line(call);
  line += ": ";
  line += std::strerror(error);
  line += " (";
  line += name != nullptr ? name : "errno " + std::to_string(error);
  line += ")";
  return line;
}

// A one-byte message on a socket whose peer may be gone: an error, never SIGPIPE.
inline bool SendByte(int fd, char byte) {
  for (;;) {
    const ssize_t n = send(fd, &byte, 1, MSG_NOSIGNAL);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// One descriptor-passing message on a SOCK_SEQPACKET channel: `slot` (8
// bytes) and room for one descriptor (SCM_RIGHTS).
struct DescriptorMessage {
  explicit DescriptorMessage(uint64_t& slot) : iov{&slot, sizeof slot} {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  DescriptorMessage(const DescriptorMessage&) = delete;
  DescriptorMessage& operator=(const DescriptorMessage&) = delete;

  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov;
  msghdr msg{};
};

// A connection handed to a pre-forked backend: `slot` with `fd`; false if
// the peer is gone.
inline bool SendDescriptor(int channel, uint64_t slot, int fd) {
  DescriptorMessage m(slot);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&m.msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
  for (;;) {
    if (sendmsg(channel, &m.msg, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof slot)) return true;
    if (errno != EINTR) return false;
  }
}

// SendDescriptor's other end: 1 with `slot` and `fd` (close-on-exec), 0 at
// EOF, -1 for anything else (an error, a message without a descriptor).
inline int ReceiveDescriptor(int channel, uint64_t& slot, int& fd) {
  DescriptorMessage m(slot);
  for (;;) {
    const ssize_t n = recvmsg(channel, &m.msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return 0;
    const cmsghdr* cmsg = CMSG_FIRSTHDR(&m.msg);
    if (n != static_cast<ssize_t>(sizeof slot) || cmsg == nullptr || cmsg->cmsg_level != SOL_SOCKET ||
        cmsg->cmsg_type != SCM_RIGHTS) {
      return -1;
    }
    std::memcpy(&fd, CMSG_DATA(cmsg), sizeof fd);
    return 1;
  }
}

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_PROTOCOL_H_
