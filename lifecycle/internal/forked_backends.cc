// `--mode=fork`, PostgreSQL's: a backend process forked for each connection
// on accept, and reaped (waitpid, or its pidfd) when it exits.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>

#include "base/resource_usage.h"
#include "lifecycle/backend.h"
#include "lifecycle/internal/backends.h"
#include "lifecycle/internal/children.h"
#include "lifecycle/internal/postmaster_state.h"
#include "lifecycle/internal/protocol.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle::internal {

class ForkedBackends final : public Backends {
 public:
  explicit ForkedBackends(Postmaster& pm) : pm_(pm), children_(pm.config().reap_pidfd, pm.config().nslots) {}

  bool CanAccept() const override { return Live() < pm_.config().nslots; }
  size_t FreeSlot() const override { return pm_.FirstFreeSlot(); }

  bool Start(size_t slot, int client_fd, const ResourceSample& before) override {
    const pid_t pid = fork();
    if (pid == 0) Child(slot, client_fd);
    const int fork_error = errno;
    // Reaping by pidfd: its pidfd is part of starting the backend.
    const int watch_error = pid > 0 ? children_.Watch(pid, slot) : 0;
    profiling::SetSampleTag(kSampleTagPostmaster);
    pm_.SetParentCost(slot, before);
    close(client_fd);
    if (pid < 0) {
      // Out of processes (RLIMIT_NPROC, pid_max) or memory: every later
      // connection would fail the same way.
      pm_.Fail(FailedCall::kFork, fork_error);
      return false;
    }
    children_.Add(pid, slot);
    // Out of descriptors, or no pidfd_open (Linux < 5.3): the backends are
    // reaped by waitpid(-1) from here on, and the run fails.
    if (watch_error != 0) pm_.Fail(FailedCall::kPidfd, watch_error);
    return true;
  }

  void Reap() override {
    children_.Reap(
        [this](pid_t pid, size_t slot, int status, const rusage& usage) {
          // Reaped now: writing its samples is not the reap's.
          const int64_t reaped_ns = NowNs();
          if (pm_.sample_slots()) pm_.AppendSamples(pm_.record(slot).sequence, *pm_.sample_slots()->Backend(slot));
          pm_.Ended(slot, {.pid = pid, .wait_status = status, .usage = &usage, .forked = true, .reaped_ns = reaped_ns});
        },
        [this](size_t slot) { pm_.Freed(slot); });
  }

  size_t Live() const override { return children_.size(); }
  void EndAll() override { children_.KillEach(); }
  void KillAll() override { children_.KillAndWait(); }

 private:
  // The backend's process: its sampler re-armed, the postmaster's
  // descriptors closed, the backend run, its status its exit code.
  [[noreturn]] void Child(size_t slot, int client_fd) {
    BackendRecord& record = pm_.record(slot);
    // Timers are not inherited: arm this backend's before anything else, so
    // its start-up is sampled too (tagged `fork`, as the postmaster left it).
    if (pm_.sample_slots()) {
      if (absl::Status s = profiling::Sampler::RestartAfterFork(pm_.sample_slots()->Backend(slot)); !s.ok()) {
        std::fprintf(stderr, "backendlab backend %d: not sampled: %s\n", getpid(), std::string(s.message()).c_str());
      }
    }
    prctl(PR_SET_NAME, "backend");  // the name perf's samples carry
    pm_.SetUpChild();
    const absl::Status status = RunBackend(*pm_.config().env, client_fd, record);
    if (!status.ok()) std::fprintf(stderr, "backendlab backend %d: %s\n", getpid(), std::string(status.message()).c_str());
    // A weight profile's `exit` exit path ran libc's exit handlers at the end
    // of teardown (RunExitHandlers): what is left of exit() is _exit.
    _exit(status.ok() ? 0 : kBackendErrorExit);
  }

  Postmaster& pm_;
  Children children_;
};

std::unique_ptr<Backends> MakeForkedBackends(Postmaster& pm) { return std::make_unique<ForkedBackends>(pm); }

}  // namespace backendlab::lifecycle::internal
