// The mock postmaster's state, shared by its loop (postmaster.cc) and the
// files of its process models (backends.h). Not for other modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_POSTMASTER_STATE_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_POSTMASTER_STATE_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "base/resource_usage.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/internal/backends.h"
#include "lifecycle/internal/io.h"
#include "lifecycle/internal/postmaster.h"
#include "lifecycle/internal/protocol.h"
#include "lifecycle/internal/sample_slots.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle::internal {

// How long the postmaster waits for its backends after being told to stop
// before it ends them (Backends::EndAll): a backend whose client is gone
// exits at once.
constexpr int64_t kStopGraceNs = 5'000'000'000;

// A getrusage reading as the messages carry it.
inline Message::Usage UsageOf(const rusage& r) {
  Message::Usage u{};
  u.user_ns = int64_t{r.ru_utime.tv_sec} * 1'000'000'000 + int64_t{r.ru_utime.tv_usec} * 1000;
  u.system_ns = int64_t{r.ru_stime.tv_sec} * 1'000'000'000 + int64_t{r.ru_stime.tv_usec} * 1000;
  u.minor_faults = r.ru_minflt;
  u.major_faults = r.ru_majflt;
  u.context_switches = r.ru_nvcsw + r.ru_nivcsw;
  return u;
}

// getrusage of the calling process alone (a pre-forked backend's).
inline Message::Usage OwnUsage() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return UsageOf(r);
}

// getrusage of this process and of the children it has reaped, summed.
inline Message::Usage ProcessAndReaped() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  Message::Usage u = UsageOf(self);
  u.postmaster_ns = u.user_ns + u.system_ns;
  const Message::Usage c = UsageOf(children);
  u.user_ns += c.user_ns;
  u.system_ns += c.system_ns;
  u.minor_faults += c.minor_faults;
  u.major_faults += c.major_faults;
  u.context_switches += c.context_switches;
  return u;
}

// The postmaster: its loop (Main), its slots and what it tells the tool.
// How a backend runs is its Backends' (backends.h); the public part below
// Main is what a process model uses.
class Postmaster {
 public:
  explicit Postmaster(const PostmasterConfig& config) : c_(config), results_fd_(config.results_fd) {}

  [[noreturn]] void Main();

  const PostmasterConfig& config() const { return c_; }
  // Slot's record, in memory shared with the backends.
  BackendRecord& record(size_t slot) { return slots_[slot]; }
  // Slot serves a connection (Taken, not yet Freed).
  bool used(size_t slot) const { return slot_used_[slot]; }
  // The first slot not used (there must be one).
  size_t FirstFreeSlot() const {
    size_t slot = 0;
    while (slot_used_[slot]) ++slot;
    return slot;
  }
  bool stopping() const { return stopping_; }
  bool failed() const { return failed_; }
  std::optional<SampleSlots>& sample_slots() { return sample_slots_; }

  // A tool that is gone reads nothing more: stop sending, keep reaping and
  // cleaning up (SIGPIPE is ignored in Main).
  void Send(const Message& m) {
    if (results_fd_ >= 0 && !WriteAll(results_fd_, &m, sizeof m)) {
      close(results_fd_);
      results_fd_ = -1;
    }
  }

  // A call that failed for good: tell the tool (one message, which it turns
  // into the run's one line), stop accepting, and end with status 1 once the
  // live backends are reaped.
  void Fail(FailedCall call, int error) {
    Message m{};
    m.type = Message::kFailed;
    m.call = call;
    m.value = error;
    Fail(m);
  }
  void Fail(const Message& failed) {
    if (failed_) return;
    failed_ = true;
    Send(failed);
    StopAccepting();
  }

  // The postmaster's own share of starting slot's backend (its fork(), or
  // pthread_create, or hand-off): what its thread spent since `before`.
  void SetParentCost(size_t slot, const ResourceSample& before) { fork_parent_cost_[slot] = SampleThread() - before; }

  // Slot's connection is over (its backend reaped, joined or idle again);
  // Ended also tells the tool how.
  void Freed(size_t slot) {
    slot_used_[slot] = false;
    if (slot_held_[slot]) {
      slot_held_[slot] = false;
      --held_live_;
    }
  }
  // Slot's connection is over, its backend gone or idle again as `end`
  // says: its record completed (with the parent's cost) and sent, the slot
  // freed.
  void Ended(size_t slot, BackendEnd end) {
    Message m{};
    m.type = Message::kBackend;
    m.record = slots_[slot];  // the backend is done: its writes are all visible
    end.fork_parent_cost = fork_parent_cost_[slot];
    CompleteRecord(end, m.record);
    Freed(slot);
    Send(m);
  }

  // In a backend's process, just forked from this one: closes what is the
  // postmaster's, dies with it, and takes the default signals and malloc
  // thresholds.
  void SetUpChild();

  // Appends a process's samples to the run's sample file (samples_fd).
  void AppendSamples(int64_t sequence, const profiling::SampleBuffer& buffer);

  // Control pipe: EOF (stop), or kUsageByte.
  void ControlSaid();

  // The server's usage since serving_start_, sent once; and its CPU.
  void SendUsage() {
    if (usage_sent_) return;
    usage_sent_ = true;
    const Message::Usage end = SelfAndChildren();
    Message m{};
    m.type = Message::kServerUsage;
    m.usage = {end.user_ns - serving_start_.user_ns,
               end.system_ns - serving_start_.system_ns,
               end.minor_faults - serving_start_.minor_faults,
               end.major_faults - serving_start_.major_faults,
               end.context_switches - serving_start_.context_switches,
               end.postmaster_ns - serving_start_.postmaster_ns};
    sent_cpu_ns_ = m.usage.user_ns + m.usage.system_ns;
    Send(m);
  }
  bool usage_sent() const { return usage_sent_; }
  int64_t sent_cpu_ns() const { return sent_cpu_ns_; }

 private:
  // The server's usage: this process and its reaped children, as the
  // process model completes it (a pool adds what its members did).
  Message::Usage SelfAndChildren() const {
    Message::Usage u = ProcessAndReaped();
    backends_->CompleteUsage(u);
    return u;
  }

  void SendBaseline() {
    for (int i = 0; i < c_.baseline_forks; ++i) {
      Message m{};
      m.type = Message::kBaselineFork;
      m.value = BareFork();
      if (m.value >= 0) Send(m);
    }
  }

  void StopAccepting() {
    if (stopping_) return;
    stopping_ = true;
    stop_deadline_ = NowNs() + kStopGraceNs;
    close(c_.listen_fd);  // no new connections from now on
    unlink(c_.socket_path.c_str());
    backends_->StopAccepting();
  }

  void Accept();
  // Slot's backend took connection `sequence`: a held one is counted, and
  // the server's usage starts after the last held one's.
  void Taken(size_t slot, int64_t sequence) {
    slot_used_[slot] = true;
    if (sequence >= c_.hold) return;
    slot_held_[slot] = true;
    ++held_live_;
    // The held backends' starts are no connection's of the loop.
    if (sequence == c_.hold - 1) serving_start_ = SelfAndChildren();
  }
  void StartSampling();
  void RemoveFiles() {
    unlink(c_.socket_path.c_str());
    rmdir(c_.dir.c_str());
  }

  const PostmasterConfig& c_;
  int results_fd_;
  int sigfd_ = -1;
  std::unique_ptr<Backends> backends_;
  std::optional<SampleSlots> sample_slots_;
  int64_t samples_lost_ = 0;  // after a failed write to samples_fd
  BackendRecord* slots_ = nullptr;  // shared with the backends
  std::vector<bool> slot_used_;
  std::vector<ResourceSample> fork_parent_cost_;  // per slot
  // Per slot: its backend serves a held connection (CycleOptions::hold);
  // and how many do.
  std::vector<bool> slot_held_;
  size_t held_live_ = 0;
  Message::Usage serving_start_{};
  int64_t sent_cpu_ns_ = 0;   // the CPU SendUsage sent
  bool usage_asked_ = false;  // kUsageByte came
  bool usage_sent_ = false;
  int64_t next_sequence_ = 0;
  pid_t pid_ = 0;
  bool stopping_ = false;
  bool failed_ = false;
  int64_t stop_deadline_ = 0;
};

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_POSTMASTER_STATE_H_
