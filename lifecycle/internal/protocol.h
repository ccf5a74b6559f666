// What the processes of a fork-mode run say to each other. Not for other
// modules.
//
// postmaster -> client, on the accepted connection: the connection's
//   sequence number (8 bytes, before the backend is forked), so that the
//   client and the postmaster agree on which connections are warm-up;
// backend -> client: kReadyByte; client -> backend: kTerminateByte (or EOF);
// postmaster -> tool, on the results pipe: Messages;
// tool -> postmaster, on the control pipe: with held connections one
//   kUsageByte (send the server's usage once only held backends live), then
//   EOF (stop).
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_PROTOCOL_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_PROTOCOL_H_

#include <limits.h>
#include <sys/socket.h>

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

// A call of the postmaster's that failed for good and ended the run.
enum class FailedCall : int32_t { kPoll = 1, kAccept = 2, kFork = 3, kThread = 4 };

inline constexpr NamedValue<FailedCall> kFailedCallNames[] = {{FailedCall::kPoll, "poll"},
                                                              {FailedCall::kAccept, "accept"},
                                                              {FailedCall::kFork, "fork"},
                                                              {FailedCall::kThread, "pthread_create"}};
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

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_PROTOCOL_H_
