// `--mode=thread`: each connection's backend a thread of the postmaster's
// process, started on accept and joined when it says it ended.
#include <pthread.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/fresh_allocations.h"
#include "base/private_pages.h"
#include "base/resource_usage.h"
#include "lifecycle/backend.h"
#include "lifecycle/internal/backends.h"
#include "lifecycle/internal/io.h"
#include "lifecycle/internal/postmaster_state.h"
#include "lifecycle/internal/protocol.h"

namespace backendlab::lifecycle::internal {

class ThreadBackends final : public Backends {
 public:
  explicit ThreadBackends(Postmaster& pm) : pm_(pm), threads_(pm.config().nslots) {
    int ended[2];
    BACKENDLAB_CHECK(pipe2(ended, O_CLOEXEC | O_NONBLOCK) == 0);
    ended_read_ = ended[0];
    ended_write_ = ended[1];
    for (size_t i = 0; i < threads_.size(); ++i) {
      threads_[i].owner = this;
      threads_[i].slot = i;
    }
    // This process is the server its backends run in: what they malloc
    // comes from its heap (glibc's arenas), as in a forked backend.
    UseDefaultMallocThresholds();
  }

  bool CanAccept() const override { return Live() < pm_.config().nslots; }
  size_t FreeSlot() const override { return pm_.FirstFreeSlot(); }

  bool Start(size_t slot, int client_fd, const ResourceSample& before) override {
    const bool started = StartThread(slot, client_fd);
    pm_.SetParentCost(slot, before);
    if (!started) {
      close(client_fd);
      return false;
    }
    ++live_;
    return true;
  }

  void AddPollFds(std::vector<pollfd>& fds) const override { fds.push_back({ended_read_, POLLIN, 0}); }
  void Polled(const pollfd* fds) override {
    if (fds[0].revents & POLLIN) JoinEnded();
  }

  size_t Live() const override { return live_; }

  // With backend threads, the process is the postmaster and its backends:
  // its own share is its thread's (called on the postmaster's thread).
  void CompleteUsage(Message::Usage& u) const override { u.postmaster_ns = SampleThread().cpu_ns; }

  // A thread cannot be killed alone: its connection is shut down, and its
  // backend ends as on the client's EOF.
  void EndAll() override {
    for (size_t i = 0; i < threads_.size(); ++i) {
      if (pm_.used(i)) shutdown(threads_[i].client_fd, SHUT_RDWR);
    }
  }

 private:
  // Per slot: the thread, its connection (shut down to end it at a stop),
  // its tid, its counters after its last call, and its arena (one from
  // free_arenas_, or a new one).
  struct ThreadSlot {
    ThreadBackends* owner = nullptr;
    size_t slot = 0;
    pthread_t thread{};
    int client_fd = -1;
    int32_t tid = 0;
    int exit_code = 0;
    ResourceSample end;
    std::unique_ptr<PageArena> arena;
  };

  // Starts slot's backend on client_fd; false if it could not.
  bool StartThread(size_t slot, int client_fd);
  static void* ThreadMain(void* arg);
  void JoinEnded();

  Postmaster& pm_;
  std::vector<ThreadSlot> threads_;
  // reuse_memory: the arenas of joined backends, the last one given back
  // first (a new backend takes the one most recently used).
  std::vector<std::unique_ptr<PageArena>> free_arenas_;
  size_t live_ = 0;
  int ended_read_ = -1, ended_write_ = -1;  // ended threads write their slot number
};

bool ThreadBackends::StartThread(size_t slot, int client_fd) {
  ThreadSlot& t = threads_[slot];
  t.client_fd = client_fd;
  t.tid = 0;
  t.exit_code = 0;
  if (pm_.config().reuse_memory) {
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
    pm_.Fail(FailedCall::kThread, error);
    return false;
  }
  return true;
}

// A backend thread: the postmaster's signal mask (SIGCHLD blocked, stop
// signals ignored by the process), its own slot's arena, its connection
// closed at its end, and its slot number to the postmaster.
void* ThreadBackends::ThreadMain(void* arg) {
  ThreadSlot& t = *static_cast<ThreadSlot*>(arg);
  ThreadBackends& owner = *t.owner;
  t.tid = static_cast<int32_t>(gettid());
  pthread_setname_np(pthread_self(), "backend");
  absl::Status status;
  {
    ScopedPageArena arena(t.arena.get());
    status = RunBackend(*owner.pm_.config().env, t.client_fd, owner.pm_.record(t.slot));
  }
  if (!status.ok()) std::fprintf(stderr, "backendlab backend thread %d: %s\n", t.tid, std::string(status.message()).c_str());
  t.exit_code = status.ok() ? 0 : kBackendErrorExit;
  close(t.client_fd);
  t.end = SampleThread();
  const uint64_t slot = t.slot;
  BACKENDLAB_CHECK(WriteAll(owner.ended_write_, &slot, sizeof slot));
  return nullptr;
}

// Joins every thread that said it ended, completes its record and sends it.
void ThreadBackends::JoinEnded() {
  uint64_t slot;
  while (read(ended_read_, &slot, sizeof slot) == sizeof slot) {
    ThreadSlot& t = threads_[slot];
    const ResourceSample before = SampleThread();
    BACKENDLAB_CHECK(pthread_join(t.thread, nullptr) == 0);
    const ResourceSample joined = SampleThread();
    --live_;
    if (t.arena) free_arenas_.push_back(std::move(t.arena));
    pm_.Ended(slot, {.pid = t.tid,
                     .wait_status = t.exit_code << 8,
                     .usage = nullptr,
                     .forked = true,
                     .reaped_ns = joined.wall_ns,
                     .thread_end = &t.end,
                     .join_cost = joined - before});
  }
}

std::unique_ptr<Backends> MakeThreadBackends(Postmaster& pm) { return std::make_unique<ThreadBackends>(pm); }

}  // namespace backendlab::lifecycle::internal
