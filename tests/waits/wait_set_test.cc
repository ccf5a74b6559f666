// The wait strategies: what each wait costs in system calls (exact, where
// the syscalls tracepoints can count them), no descriptor leaked, the
// latch and postmaster death seen, and the cached sets' hazard with a
// reused descriptor number.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "profiling/perf_events.h"
#include "waits/postmaster_death.h"
#include "waits/signalfd_epoll_latch.h"
#include "waits/wait_dispatch.h"
#include "tests/test_util/skip.h"

namespace backendlab::waits {
namespace {

using Latch = SignalfdEpollLatch;

int OpenDescriptors() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;  // the directory's own
}

// A latch of this process, the postmaster-death pipe and a socket pair: what
// a backend's set holds. [0] is the backend's end.
class Fixture {
 public:
  Fixture() {
    shared_ = static_cast<Latch::Shared*>(
        mmap(nullptr, sizeof(Latch::Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    EXPECT_TRUE(Latch::InitShared(*shared_).ok());
    absl::StatusOr<PostmasterDeathPipe> p = PostmasterDeathPipe::Create();
    EXPECT_TRUE(p.ok());
    death_ = *std::move(p);
    absl::StatusOr<Latch> l = Latch::Own(*shared_, death_.watch_fd());
    EXPECT_TRUE(l.ok()) << l.status();
    latch_.emplace(*std::move(l));
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock_), 0);
  }
  ~Fixture() {
    latch_.reset();
    close(sock_[0]);
    close(sock_[1]);
    munmap(shared_, sizeof(Latch::Shared));
  }
  Latch& latch() { return *latch_; }
  Latch::Shared& shared() { return *shared_; }
  PostmasterDeathPipe& death() { return death_; }
  int backend() const { return sock_[0]; }
  int client() const { return sock_[1]; }

 private:
  Latch::Shared* shared_;
  PostmasterDeathPipe death_;
  std::optional<Latch> latch_;
  int sock_[2] = {-1, -1};
};

template <typename Strategy>
class WaitSetTest : public ::testing::Test {};

// Strategy stands for the set template; the tests instantiate it over Latch.
template <template <typename> class Set>
struct StrategyOf {
  using Type = Set<Latch>;
};
using Strategies = ::testing::Types<StrategyOf<PerCallWait>, StrategyOf<LongLivedWait>, StrategyOf<CachedWait>,
                                    StrategyOf<PollWait>>;
class StrategyNames {
 public:
  template <typename S>
  static std::string GetName(int) {
    std::string name(WaitStrategyName(S::Type::kStrategy));
    for (char& c : name) c = c == '-' ? '_' : c;
    return name;
  }
};
TYPED_TEST_SUITE(WaitSetTest, Strategies, StrategyNames);

template <typename S>
S MakeSet(Fixture& f) {
  absl::StatusOr<S> s = S::Create(f.latch(), f.death().watch_fd(), f.backend());
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

// Runs `fn`, and returns the system calls it made, by kind, exactly; or
// nullopt (and the test skipped by the caller) where the kernel cannot
// count them.
struct Calls {
  int64_t total = 0;
  std::map<std::string, int64_t> by_kind;
};
constexpr std::string_view kKinds[] = {"epoll_create1", "epoll_ctl", "epoll_wait", "close", "poll", "recvfrom", "read"};

template <typename Fn>
std::optional<Calls> Count(Fn fn) {
  absl::StatusOr<profiling::SyscallCounters> c = profiling::SyscallCounters::Open(kKinds);
  if (!c.ok()) {
    fn();
    return std::nullopt;
  }
  profiling::SyscallCounters::Counts begin, end;
  EXPECT_TRUE(c->Read(begin));
  fn();
  EXPECT_TRUE(c->Read(end));
  const profiling::SyscallCounters::Counts d = c->Between(begin, end);
  Calls calls;
  calls.total = d.total;
  for (size_t i = 0; i < std::size(kKinds); ++i) calls.by_kind[std::string(kKinds[i])] = d.by_kind[i];
  return calls;
}

#define SKIP_UNLESS_COUNTED(calls)                                                                    \
  if (!(calls)) {                                                                                     \
    BACKENDLAB_SKIP(test_util::SyscallCountsNeed())                                                \
        << profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls).message();               \
  }

// What each strategy costs per wait, exactly. Three cases: nothing there
// (the wait sleeps until its timeout), data there (it returns at once),
// the latch set (it returns before any kernel wait).
TYPED_TEST(WaitSetTest, ExactSystemCallsPerWait) {
  using S = typename TypeParam::Type;
  Fixture f;
  S set = MakeSet<S>(f);
  // The first wait of a set may pay for what later ones reuse (cached: the
  // set; long-lived: switching the socket from writable, as pq_init added
  // it, to readable): counted on its own.
  std::optional<Calls> first = Count([&] { EXPECT_EQ(set.WaitOrSocket(f.backend(), kSocketReadable, 1), kTimeout); });
  SKIP_UNLESS_COUNTED(first);
  std::optional<Calls> idle = Count([&] { EXPECT_EQ(set.WaitOrSocket(f.backend(), kSocketReadable, 1), kTimeout); });
  ASSERT_EQ(send(f.client(), "x", 1, 0), 1);
  std::optional<Calls> ready = Count([&] { EXPECT_EQ(set.WaitOrSocket(f.backend(), kSocketReadable, -1), kSocketReadable); });
  Latch::Set(f.shared());
  std::optional<Calls> latched = Count([&] { EXPECT_EQ(set.WaitOrSocket(f.backend(), kSocketReadable, -1), kLatchSet); });
  f.latch().Reset();

  switch (S::kStrategy) {
    case WaitStrategy::kPerCall:
      // epoll_create1, 3 x epoll_ctl, epoll_wait, close; no epoll_wait when the latch is set.
      for (const Calls* c : {&*first, &*idle, &*ready}) {
        EXPECT_EQ(c->total, 6);
        EXPECT_EQ(c->by_kind.at("epoll_create1"), 1);
        EXPECT_EQ(c->by_kind.at("epoll_ctl"), 3);
        EXPECT_EQ(c->by_kind.at("epoll_wait"), 1);
        EXPECT_EQ(c->by_kind.at("close"), 1);
      }
      EXPECT_EQ(latched->total, 5);
      EXPECT_EQ(latched->by_kind.at("epoll_wait"), 0);
      break;
    case WaitStrategy::kLongLived:
      EXPECT_EQ(first->total, 2);  // epoll_ctl(MOD) to readable, epoll_wait
      EXPECT_EQ(first->by_kind.at("epoll_ctl"), 1);
      EXPECT_EQ(idle->total, 1);
      EXPECT_EQ(idle->by_kind.at("epoll_wait"), 1);
      EXPECT_EQ(ready->total, 1);
      EXPECT_EQ(latched->total, 0);
      break;
    case WaitStrategy::kCached:
      EXPECT_EQ(first->total, 5);  // epoll_create1, 3 x epoll_ctl, epoll_wait: the set is kept
      EXPECT_EQ(first->by_kind.at("close"), 0);
      for (const Calls* c : {&*idle, &*ready}) {
        EXPECT_EQ(c->total, 2);  // the re-add (EEXIST) and epoll_wait
        EXPECT_EQ(c->by_kind.at("epoll_ctl"), 1);
        EXPECT_EQ(c->by_kind.at("epoll_wait"), 1);
      }
      EXPECT_EQ(latched->total, 1);
      break;
    case WaitStrategy::kPoll:
      for (const Calls* c : {&*first, &*idle, &*ready}) {
        EXPECT_EQ(c->total, 1);
        EXPECT_EQ(c->by_kind.at("poll"), 1);
      }
      EXPECT_EQ(latched->total, 0);
      break;
  }
}

// A read as each strategy's callers make it: long-lived tries the read
// first, so with the data already there it waits not at all — one
// recvfrom and nothing else; the others wait first.
TYPED_TEST(WaitSetTest, ReceiveWaitsOnlyWhereTheStrategySays) {
  using S = typename TypeParam::Type;
  Fixture f;
  S set = MakeSet<S>(f);
  (void)set.WaitOrSocket(f.backend(), kSocketReadable, 1);  // the first wait's set-up, not counted
  ASSERT_EQ(send(f.client(), "abc", 3, 0), 3);
  char buf[8];
  const int64_t waits_before = set.waits();
  Received r;
  std::optional<Calls> calls = Count([&] { r = set.Receive(f.backend(), buf, sizeof buf); });
  EXPECT_EQ(r.bytes, 3);
  SKIP_UNLESS_COUNTED(calls);
  EXPECT_EQ(calls->by_kind.at("recvfrom"), 1);
  if (S::kStrategy == WaitStrategy::kLongLived) {
    EXPECT_EQ(set.waits(), waits_before);
    EXPECT_EQ(calls->total, 1);
  } else {
    EXPECT_EQ(set.waits(), waits_before + 1);
  }
  // EOF is a read of 0 bytes, through a wait or not.
  shutdown(f.client(), SHUT_WR);
  r = set.Receive(f.backend(), buf, sizeof buf);
  EXPECT_EQ(r.bytes, 0);
}

// 10^5 waits leave the descriptor count where the set-up left it.
TYPED_TEST(WaitSetTest, NoDescriptorLeakOverManyWaits) {
  using S = typename TypeParam::Type;
  Fixture f;
  S set = MakeSet<S>(f);
  ASSERT_EQ(send(f.client(), "x", 1, 0), 1);  // level-triggered: every wait finds it
  ASSERT_EQ(set.WaitOrSocket(f.backend(), kSocketReadable, -1), kSocketReadable);
  const int after_first = OpenDescriptors();
  for (int i = 0; i < 100'000; ++i) {
    if (set.WaitOrSocket(f.backend(), kSocketReadable, -1) != kSocketReadable) {
      FAIL() << "wait " << i << " did not see the socket readable";
    }
  }
  EXPECT_EQ(OpenDescriptors(), after_first);
  EXPECT_EQ(set.waits(), 100'001);
}

// The latch set from another process wakes a set asleep on its socket;
// a dead postmaster is reported.
TYPED_TEST(WaitSetTest, LatchAndPostmasterDeathWakeTheWait) {
  using S = typename TypeParam::Type;
  Fixture f;
  S set = MakeSet<S>(f);
  const pid_t child = fork();
  if (child == 0) {
    usleep(20'000);
    Latch::Set(f.shared());
    _exit(0);
  }
  EXPECT_EQ(set.WaitOrSocket(f.backend(), kSocketReadable, 5000), kLatchSet);
  int status;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  f.latch().Reset();
  EXPECT_EQ(set.WaitOrSocket(f.backend(), kSocketReadable, 5), kTimeout);
  f.death().CloseOwnEnd();
  EXPECT_EQ(set.WaitOrSocket(f.backend(), kSocketReadable, 5000), kPostmasterDeath);
  char buf[4];
  EXPECT_TRUE(set.Receive(f.backend(), buf, sizeof buf).postmaster_died);
}

// Andres Freund's objection to the cache of the 2018 WaitLatchOrSocket
// thread, shown: a socket closed while another descriptor still refers to
// its open file (a dup here; in PostgreSQL a forked child's copy) stays
// registered in the cached epoll set under its old number. Its peer gone,
// that old file is at EOF — readable for ever — and the set reports it as
// the new socket that took the number: every wait returns at once, and the
// read finds nothing. A set made afresh (per-call) watches only the new
// socket and sleeps.
TEST(CachedWaitTest, AReusedDescriptorNumberKeepsTheOldSocketsEvents) {
  Fixture f;
  absl::StatusOr<CachedWait<Latch>> cached = CachedWait<Latch>::Create(f.latch(), f.death().watch_fd(), -1);
  absl::StatusOr<PerCallWait<Latch>> fresh = PerCallWait<Latch>::Create(f.latch(), f.death().watch_fd(), -1);
  ASSERT_TRUE(cached.ok() && fresh.ok());
  int old_pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, old_pair), 0);
  const int number = old_pair[0];
  EXPECT_EQ(cached->WaitOrSocket(number, kSocketReadable, 1), kTimeout);  // cached under (readable, number)
  const int copy = dup(number);                                          // the old file lives on
  close(number);
  close(old_pair[1]);  // and is at EOF
  int new_pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, new_pair), 0);
  // The lowest free number is `number`: the new socket takes it.
  const int peer = new_pair[0] == number ? new_pair[1] : new_pair[0];
  ASSERT_TRUE(new_pair[0] == number || new_pair[1] == number);

  EXPECT_EQ(fresh->WaitOrSocket(number, kSocketReadable, 20), kTimeout) << "nothing to read: a fresh set sleeps";
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(cached->WaitOrSocket(number, kSocketReadable, 5000), kSocketReadable)
        << "wait " << i << ": the cached set did not report the old socket's EOF";
    char c;
    ASSERT_EQ(recv(number, &c, 1, MSG_DONTWAIT), -1) << "the new socket had nothing to read";
    ASSERT_EQ(errno, EAGAIN);
  }
  // The last reference gone, the kernel drops the old registration: the
  // hazard needs the copy.
  close(copy);
  EXPECT_EQ(cached->WaitOrSocket(number, kSocketReadable, 20), kTimeout);
  ASSERT_EQ(send(peer, "data", 4, 0), 4);
  EXPECT_EQ(cached->WaitOrSocket(number, kSocketReadable, 5000), kSocketReadable);
  close(new_pair[0]);
  close(new_pair[1]);
}

}  // namespace
}  // namespace backendlab::waits
