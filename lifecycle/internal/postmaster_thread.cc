// `--mode=thread`: each connection's backend a thread of the postmaster's
// process, started on accept and joined when it says it ended.
#include <pthread.h>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/check.h"
#include "base/fresh_allocations.h"
#include "base/interrupt.h"
#include "base/private_pages.h"
#include "base/resource_usage.h"
#include "lifecycle/backend.h"
#include "lifecycle/internal/postmaster_state.h"
#include "lifecycle/internal/protocol.h"

namespace backendlab::lifecycle::internal {

bool Postmaster::StartThread(size_t slot, int client_fd) {
  ThreadSlot& t = threads_[slot];
  t.client_fd = client_fd;
  t.tid = 0;
  t.exit_code = 0;
  if (c_.reuse_memory) {
    if (free_arenas_.empty()) {
      t.arena = std::make_unique<PageArena>();
    } else {
      t.arena = std::move(free_arenas_.back());
      free_arenas_.pop_back();
    }
  }
  const int error = pthread_create(&t.thread, nullptr, &ThreadMain, &t);
  if (error != 0) {
    // Out of threads (RLIMIT_NPROC, threads-max) or memory for a stack:
    // every later connection would fail the same way.
    Fail(FailedCall::kThread, error);
    return false;
  }
  return true;
}

// A backend thread: the postmaster's signal mask (SIGCHLD blocked, stop
// signals ignored by the process), its own slot's arena, its connection
// closed at its end, and its slot number to the postmaster.
void* Postmaster::ThreadMain(void* arg) {
  ThreadSlot& t = *static_cast<ThreadSlot*>(arg);
  Postmaster& pm = *t.postmaster;
  t.tid = static_cast<int32_t>(gettid());
  pthread_setname_np(pthread_self(), "backend");
  absl::Status status;
  {
    ScopedPageArena arena(t.arena.get());
    status = RunBackend(*pm.c_.env, t.client_fd, pm.slots_[t.slot]);
  }
  if (!status.ok()) std::fprintf(stderr, "backendlab backend thread %d: %s\n", t.tid, std::string(status.message()).c_str());
  t.exit_code = status.ok() ? 0 : kBackendErrorExit;
  close(t.client_fd);
  t.end = SampleThread();
  const uint64_t slot = t.slot;
  BACKENDLAB_CHECK(WriteAll(pm.ended_write_, &slot, sizeof slot));
  return nullptr;
}

// Joins every thread that said it ended, completes its record and sends it.
void Postmaster::JoinEnded() {
  uint64_t slot;
  while (read(ended_read_, &slot, sizeof slot) == sizeof slot) {
    ThreadSlot& t = threads_[slot];
    const ResourceSample before = SampleThread();
    BACKENDLAB_CHECK(pthread_join(t.thread, nullptr) == 0);
    const ResourceSample joined = SampleThread();
    --live_threads_;
    Freed(slot);
    if (t.arena) free_arenas_.push_back(std::move(t.arena));
    Message m{};
    m.type = Message::kBackend;
    m.record = slots_[slot];
    CompleteRecord({.pid = t.tid,
                    .wait_status = t.exit_code << 8,
                    .usage = nullptr,
                    .forked = true,
                    .fork_parent_cost = fork_parent_cost_[slot],
                    .reaped_ns = joined.wall_ns,
                    .thread_end = &t.end,
                    .join_cost = joined - before},
                   m.record);
    Send(m);
  }
}

}  // namespace backendlab::lifecycle::internal
