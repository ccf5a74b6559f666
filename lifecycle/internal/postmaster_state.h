// The mock postmaster's state and its parts, shared by the files of its
// process models: postmaster.cc (the loop, and forked backends),
// postmaster_thread.cc (backend threads), postmaster_prefork.cc (a pool of
// pre-forked backends). Not for other modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_POSTMASTER_STATE_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_POSTMASTER_STATE_H_

#include <pthread.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "base/private_pages.h"
#include "base/resource_usage.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/internal/io.h"
#include "lifecycle/internal/postmaster.h"
#include "lifecycle/internal/protocol.h"
#include "lifecycle/internal/sample_slots.h"
#include "profiling/sampler.h"

namespace backendlab::lifecycle::internal {

// How long the postmaster waits for its backends after being told to stop
// before it SIGKILLs them: a backend whose client is gone exits at once.
constexpr int64_t kStopGraceNs = 5'000'000'000;
// How often the postmaster looks for a busy pre-forked backend that is
// stopped (kStoppedMemberNs says how long one may stay so).
constexpr int64_t kMemberCheckNs = 1'000'000'000;

class Postmaster {
 public:
  explicit Postmaster(const PostmasterConfig& config) : c_(config), results_fd_(config.results_fd) {}

  [[noreturn]] void Main();

 private:
  // A tool that is gone reads nothing more: stop sending, keep reaping and
  // cleaning up (SIGPIPE is ignored in Main).
  void Send(const Message& m) {
    if (results_fd_ >= 0 && !WriteAll(results_fd_, &m, sizeof m)) {
      close(results_fd_);
      results_fd_ = -1;
    }
  }

  // getrusage of the calling process alone (a pre-forked backend's).
  static Message::Usage OwnUsage() {
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    Message::Usage u{};
    u.user_ns = int64_t{r.ru_utime.tv_sec} * 1'000'000'000 + int64_t{r.ru_utime.tv_usec} * 1000;
    u.system_ns = int64_t{r.ru_stime.tv_sec} * 1'000'000'000 + int64_t{r.ru_stime.tv_usec} * 1000;
    u.minor_faults = r.ru_minflt;
    u.major_faults = r.ru_majflt;
    u.context_switches = r.ru_nvcsw + r.ru_nivcsw;
    return u;
  }

  // getrusage of this process and of the children it has reaped, summed.
  static Message::Usage ProcessAndReaped() {
    Message::Usage u{};
    for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
      rusage r{};
      getrusage(who, &r);
      u.user_ns += int64_t{r.ru_utime.tv_sec} * 1'000'000'000 + int64_t{r.ru_utime.tv_usec} * 1000;
      u.system_ns += int64_t{r.ru_stime.tv_sec} * 1'000'000'000 + int64_t{r.ru_stime.tv_usec} * 1000;
      u.minor_faults += r.ru_minflt;
      u.major_faults += r.ru_majflt;
      u.context_switches += r.ru_nvcsw + r.ru_nivcsw;
      if (who == RUSAGE_SELF) u.postmaster_ns = u.user_ns + u.system_ns;
    }
    return u;
  }

  // The server's usage: this process and its reaped children, and what
  // its pre-forked backends did since they were built.
  Message::Usage SelfAndChildren() const {
    const bool threads = c_.threads;
    Message::Usage u = ProcessAndReaped();
    // With backend threads, the process is the postmaster and its backends:
    // its own share is its thread's (called on the postmaster's thread).
    if (threads) u.postmaster_ns = SampleThread().cpu_ns;
    // Pre-forked backends are never reaped while serving: what each did
    // since it was built, as it said after its latest connection.
    for (size_t i = 0; i < pool_.size(); ++i) {
      const Message::Usage& b = members_[i].base;
      const Message::Usage& l = members_[i].latest;
      u.user_ns += l.user_ns - b.user_ns;
      u.system_ns += l.system_ns - b.system_ns;
      u.minor_faults += l.minor_faults - b.minor_faults;
      u.major_faults += l.major_faults - b.major_faults;
      u.context_switches += l.context_switches - b.context_switches;
    }
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

  void StopAccepting() {
    if (stopping_) return;
    stopping_ = true;
    stop_deadline_ = NowNs() + kStopGraceNs;
    close(c_.listen_fd);  // no new connections from now on
    unlink(c_.socket_path.c_str());
    // Pre-forked backends stop once none serves a connection: the server's
    // usage first (they are not reaped before), then their channels close.
    if (c_.pool > 0) pool_closing_ = true;
  }

  // The server's usage since serving_start_, sent once.
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

  // A pool's: the server's CPU from before the pool was built to its last
  // member reaped, less the usage sent (SendUsage), which counts each
  // member from after it was built. What is left is the pool's build and
  // end (and, with held connections, their opening and what follows the
  // usage): no connection's, and no figure's but this.
  void SendPoolOutside() {
    if (c_.pool == 0 || !usage_sent_ || failed_) return;
    const Message::Usage end = ProcessAndReaped();
    Message m{};
    m.type = Message::kPoolOutside;
    m.value = end.user_ns + end.system_ns - before_pool_cpu_ns_ - sent_cpu_ns_;
    Send(m);
  }

  [[noreturn]] void BackendChild(size_t slot, int client_fd, int sigfd);
  void Accept(int sigfd);
  // Control pipe: EOF (stop), or kUsageByte.
  void ControlSaid();
  // Reaps every backend that has exited: wait4(-1) until it returns 0, or,
  // reaping by pidfd, those whose pidfd is readable, each by its pid.
  void Reap();
  void ReapByPidfd();
  // Reaping by pidfd: watches `pid`'s pidfd; 0, or the errno that stopped it.
  int WatchChild(pid_t pid, size_t slot);
  void Reaped(pid_t pid, int status, const rusage& usage);
  // Threads: starts slot's backend on client_fd; false if it could not.
  bool StartThread(size_t slot, int client_fd);
  static void* ThreadMain(void* arg);
  void JoinEnded();
  size_t Live() const { return live_.size() + live_threads_; }
  // Backends serving a connection: the live ones, or the busy members of a pool.
  size_t Serving() const {
    if (c_.pool == 0) return Live();
    return static_cast<size_t>(std::count_if(pool_.begin(), pool_.end(), [](const Member& m) { return m.busy; }));
  }
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
  // Slot's connection is over (its backend reaped, joined or idle again).
  void Freed(size_t slot) {
    slot_used_[slot] = false;
    if (slot_held_[slot]) {
      slot_held_[slot] = false;
      --held_live_;
    }
  }
  // Pre-forked backends.
  bool StartMember(size_t i);
  [[noreturn]] void MemberChild(size_t i, int channel, int sigfd);
  void MemberSaid(size_t i);
  bool HandOff(size_t slot, int client_fd);
  void MemberEnded(size_t slot, pid_t pid, int status);
  void ReplaceMember(size_t i);
  void ClosePool();
  // Kills a busy member that has stayed stopped kStoppedMemberNs and fails
  // the run naming it; looks every kMemberCheckNs.
  void CheckStoppedMembers();
  // While the pool is built: member i's ready byte, true once it came;
  // false if the member died, stayed stopped (CheckStoppedMembers), or the
  // tool asked for a stop.
  bool AwaitReady(size_t i);
  bool AnyIdle() const {
    return std::any_of(pool_.begin(), pool_.end(), [](const Member& m) { return m.channel >= 0 && m.idle; });
  }
  bool AnyBusy() const {
    return std::any_of(pool_.begin(), pool_.end(), [](const Member& m) { return m.channel >= 0 && m.busy; });
  }
  void AppendSamples(int64_t sequence, const profiling::SampleBuffer& buffer);
  void StartSampling();
  void KillAndReapAll();
  void RemoveFiles() {
    unlink(c_.socket_path.c_str());
    rmdir(c_.dir.c_str());
  }

  const PostmasterConfig& c_;
  int results_fd_;
  std::optional<SampleSlots> sample_slots_;
  int64_t samples_lost_ = 0;  // after a failed write to samples_fd
  BackendRecord* slots_ = nullptr;  // shared with the backends
  std::vector<bool> slot_used_;
  std::vector<ResourceSample> fork_parent_cost_;  // per slot
  std::map<pid_t, size_t> live_;                   // pid -> slot
  // Per slot: its backend serves a held connection (CycleOptions::hold);
  // and how many do.
  std::vector<bool> slot_held_;
  size_t held_live_ = 0;
  // Threads: per slot, the thread, its connection (shut down to end it at a
  // stop), its tid, its counters after its last call, and its arena (one
  // from free_arenas_, or a new one).
  struct ThreadSlot {
    Postmaster* postmaster = nullptr;
    size_t slot = 0;
    pthread_t thread{};
    int client_fd = -1;
    int32_t tid = 0;
    int exit_code = 0;
    ResourceSample end;
    std::unique_ptr<PageArena> arena;
  };
  std::vector<ThreadSlot> threads_;
  // reuse_memory: the arenas of joined backends, the last one given back
  // first (a new backend takes the one most recently used).
  std::vector<std::unique_ptr<PageArena>> free_arenas_;
  // Pre-forked backends: each member's process and channel, and, in shared
  // memory, its own usage when it was built (base) and after its latest
  // connection (latest), and its counters after its last call (end).
  struct Member {
    pid_t pid = 0;
    int channel = -1;   // the postmaster's end; -1: closed
    bool idle = false;   // built, no connection
    bool busy = false;   // serving the connection in its slot (its index)
    bool ready = false;  // it said it was built, once
    int64_t stopped_since = 0;  // busy and found stopped since then (CheckStoppedMembers); 0: not
  };
  struct MemberShared {
    Message::Usage base, latest;
    ResourceSample end;
  };
  std::vector<Member> pool_;
  MemberShared* members_ = nullptr;
  int sigfd_ = -1;
  bool pool_closing_ = false;  // told to stop: usage once no member is busy, then channels closed
  int64_t members_checked_ns_ = 0;  // CheckStoppedMembers' last look
  // Reaping by pidfd: the epoll set of the live backends' pidfds, and each
  // slot's pidfd (-1: none). Cleared if a pidfd could not be watched: then
  // waitpid(-1) reaps what is left.
  bool reap_pidfd_ = false;
  int reap_epoll_ = -1;
  std::vector<int> pidfds_;
  size_t live_threads_ = 0;
  int ended_read_ = -1, ended_write_ = -1;  // ended threads write their slot number
  Message::Usage serving_start_{};
  int64_t before_pool_cpu_ns_ = 0;  // ProcessAndReaped's CPU before the pool's build
  int64_t sent_cpu_ns_ = 0;         // the CPU SendUsage sent
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
