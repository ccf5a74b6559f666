// The mock postmaster: a forked process that accepts connections on a Unix
// socket, forks a backend for each, reaps it, completes its record and sends
// it to the tool. Not for other modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_POSTMASTER_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_POSTMASTER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "lifecycle/backend.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle::internal {

struct PostmasterConfig {
  const BackendEnvironment* env = nullptr;
  int listen_fd = -1;
  int control_fd = -1;  // EOF: stop (the tool closed it, or died)
  int results_fd = -1;  // Messages (protocol.h) to the tool
  int samples_fd = -1;  // with a sampler: where reaped backends' samples go
  int baseline_forks = 0;
  int64_t warmup = 0;   // IsWarmup (protocol.h): the held connections and the warm-up
  // The first `hold` connections are held (CycleOptions::hold): the
  // server's usage is taken from after the last one's fork, and, once the
  // tool asks (kUsageByte on the control pipe), as soon as only held
  // backends live, before any of them ends.
  int64_t hold = 0;
  std::optional<profiling::SamplerOptions> sampler;
  std::string socket_path;
  std::string dir;
  size_t nslots = 0;    // backends alive or not yet reaped at once
  // Each backend a thread of this process (env->kind is kThread), not a
  // forked child; with reuse_memory, each backend takes its private memory
  // from an arena an ended backend gave back (base/private_pages.h): the
  // most recently given back, or a new one if none is free.
  bool threads = false;
  bool reuse_memory = false;
  // Pre-forked backends (env->kind is kPooled): so many, forked and built
  // before serving, each handed connections one at a time; 0: none.
  int pool = 0;
  // Forked backends reaped by pidfd (CycleOptions::reap), not by
  // waitpid(-1) in a loop.
  bool reap_pidfd = false;
};

// Runs the postmaster in the calling (just forked) process until the control
// pipe reaches EOF and every backend is reaped (or, threads, joined); removes the socket and the
// directory; exits 0, or 1 after a failure it has reported (Message::kFailed).
// Ignores the stop signals: the tool stops it through the control pipe.
[[noreturn]] void RunPostmaster(const PostmasterConfig& config);

// One bare fork + _exit + waitpid, in ns (-1 if fork failed): the floor every
// backend starts from.
int64_t BareFork();

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_POSTMASTER_H_
