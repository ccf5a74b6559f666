// Every latch keeps PostgreSQL's contract: no lost wake-up, sets coalesce,
// SetLatch from a signal handler, timeouts honoured, spurious wake-ups
// tolerated by callers that loop.
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <random>

#include "base/resource_usage.h"
#include "gtest/gtest.h"
#include "waits/latch_dispatch.h"
#include "waits/postmaster_death.h"
#include "tests/test_util/skip.h"

namespace backendlab::waits {
namespace {

// The stress test's cycles: 10^6 in the builds users measure with; an ASan
// build, several times slower per system call and here for memory errors,
// runs 10^5.
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kCycles = 100'000;
#else
constexpr int64_t kCycles = 1'000'000;
#endif

// A wait that sees nothing for this long has missed a wake-up: a hang
// detector, not a timing.
constexpr int64_t kLostAfterMs = 5000;

// Memory shared with a forked child, unmapped at the end of the test.
template <typename T>
class Shared {
 public:
  Shared() {
    void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    value_ = new (p) T();
  }
  ~Shared() {
    value_->~T();
    munmap(value_, sizeof(T));
  }
  T& operator*() { return *value_; }
  T* operator->() { return value_; }

 private:
  T* value_;
};

// Forks `body` as a child that dies with the test process; returns its pid.
template <typename Body>
pid_t Fork(Body body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

int ExitCodeOf(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

template <typename L>
class LatchTest : public ::testing::Test {};

using Latches = ::testing::Types<SelfpipeSelectLatch, SelfpipePollLatch, SignalfdEpollLatch, SemaphoreLatch,
                                 EventfdEpollLatch, FutexLatch>;
class LatchNames {
 public:
  template <typename L>
  static std::string GetName(int) {
    std::string name(LatchName(L::kKind));
    for (char& c : name) c = c == '-' ? '_' : c;
    return name;
  }
};
TYPED_TEST_SUITE(LatchTest, Latches, LatchNames);

template <typename L>
struct Stress {
  typename L::Shared latch;
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> seen{0};
  std::atomic<int64_t> waits{0};
  std::atomic<int64_t> spurious{0};
  std::atomic<int> owner_done{0};  // the owner has returned: the setter must not wait for it
};

// The owner follows PostgreSQL's pattern (reset, check for work, wait); the
// setter gives it work one item at a time, after a random delay — none
// (a set before the owner waits), a spin, a yield, a sleep (a set on a
// sleeping owner) — and now and then sets the latch with no work at all,
// a wake-up the owner must shrug off. A lost wake-up leaves the owner
// asleep with work pending: its wait times out and the test fails.
TYPED_TEST(LatchTest, NoLostWakeupOverManyCycles) {
  using L = TypeParam;
  Shared<Stress<L>> s;
  ASSERT_TRUE(L::InitShared(s->latch).ok());
  const pid_t owner = Fork([&] {
    const int code = [&] {
    absl::StatusOr<L> latch = L::Own(s->latch, -1);
    if (!latch.ok()) return 3;
    for (;;) {
      latch->Reset();
      const int64_t sent = s->sent.load(std::memory_order_acquire);
      if (sent > s->seen.load(std::memory_order_relaxed)) {
        s->seen.store(sent, std::memory_order_release);
        if (sent == kCycles) return 0;
        continue;
      }
      s->waits.fetch_add(1, std::memory_order_relaxed);
      const uint32_t events = latch->Wait(kLostAfterMs);
      if (events & kTimeout) return s->sent.load() > s->seen.load() ? 1 : 2;
      if (events & kWaitFailed) return 4;
    }
    }();
    s->owner_done.store(1);
    return code;
  });
  const pid_t setter = Fork([&] {
    auto owner_gone = [&] { return s->owner_done.load(std::memory_order_relaxed) != 0; };
    while (s->latch.state.owner_pid.load() == 0) {
      if (owner_gone()) return 0;
      sched_yield();
    }
    std::mt19937 random(42);
    for (int64_t i = 1; i <= kCycles; ++i) {
      // Spin a little for the owner to take the last item, then give it the
      // CPU: on a loaded machine it may be waiting for this one.
      for (int spins = 0; s->seen.load(std::memory_order_acquire) != i - 1; ++spins) {
        if (owner_gone()) return 0;
        if (spins < 200) {
          __builtin_ia32_pause();
        } else {
          sched_yield();
        }
      }
      // Mostly short: the owner is then somewhere between its reset and its
      // sleep, where a lost wake-up would hide; now and then long enough
      // for it to be fast asleep.
      const uint32_t r = random();
      if (r % 1024 == 0) {
        const timespec nap{0, 20'000};
        nanosleep(&nap, nullptr);
      } else if (r % 32 == 0) {
        sched_yield();
      } else if (r % 4 == 0) {
        for (uint32_t k = 0; k < r % 256; ++k) __builtin_ia32_pause();
      }
      if (r % 97 == 0) {
        s->spurious.fetch_add(1, std::memory_order_relaxed);
        L::Set(s->latch);  // no work: a wake-up for nothing
        while (s->latch.state.is_set.load() != 0) {
          if (owner_gone()) return 0;
          __builtin_ia32_pause();
        }
      }
      s->sent.store(i, std::memory_order_release);
      L::Set(s->latch);
    }
    return 0;
  });
  const int owner_code = ExitCodeOf(owner);
  EXPECT_EQ(ExitCodeOf(setter), 0);
  L::DestroyShared(s->latch);
  EXPECT_EQ(owner_code, 0) << "after " << s->seen.load() << " cycles: "
                           << (owner_code == 1   ? "a lost wake-up: work pending, the owner slept 5 s"
                               : owner_code == 2 ? "the owner slept 5 s with no work pending: the setter stalled"
                                                 : "the owner failed to own or to wait");
  EXPECT_EQ(s->seen.load(), kCycles);
  // Both kinds of cycle happened: some sets found the owner asleep (it
  // waited), and some wake-ups were for nothing.
  EXPECT_GT(s->waits.load(), 0);
  EXPECT_GT(s->spurious.load(), 0);
}

// Many sets of an unreset latch are one; a latch set and reset many times
// by its owner (for the self-pipe: a byte each time, until the pipe is full
// and the writes find EAGAIN) never hangs and leaves no wake-up behind.
TYPED_TEST(LatchTest, SetsCoalesceAndAFullPipeNeverHangs) {
  using L = TypeParam;
  Shared<typename L::Shared> shared;
  ASSERT_TRUE(L::InitShared(*shared).ok());
  {
    absl::StatusOr<L> latch = L::Own(*shared, -1);
    ASSERT_TRUE(latch.ok()) << latch.status();
    for (int i = 0; i < 100'000; ++i) {  // 100,000 bytes: more than a pipe holds (64 kB)
      latch->Reset();
      L::Set(*shared);
    }
    EXPECT_EQ(latch->Wait(5000), kLatchSet);
    latch->Reset();
    EXPECT_EQ(latch->Wait(20), kTimeout) << "a wake-up was left behind";

    // Another process sets it 10,000 times while the owner sleeps: one wake.
    latch->Reset();
    Shared<std::atomic<int>> done;
    const pid_t setter = Fork([&] {
      for (int i = 0; i < 10'000; ++i) L::Set(*shared);
      done->store(1);
      return 0;
    });
    EXPECT_EQ(latch->Wait(kLostAfterMs), kLatchSet);
    EXPECT_EQ(ExitCodeOf(setter), 0);
    EXPECT_EQ(done->load(), 1);
    latch->Reset();
    EXPECT_EQ(latch->Wait(20), kTimeout) << "10,000 sets gave more than one wake-up";
  }
  L::DestroyShared(*shared);
}

// SetLatch is async-signal-safe, and wakes the owner from a handler that
// interrupts its own wait (the race the self-pipe was invented for) and
// from another process's handler.
template <typename L>
typename L::Shared* g_handler_latch = nullptr;

template <typename L>
void SetFromHandler(int) {
  const int saved = errno;
  L::Set(*g_handler_latch<L>);
  errno = saved;
}

TYPED_TEST(LatchTest, SetFromASignalHandlerWakesTheOwner) {
  using L = TypeParam;
  Shared<typename L::Shared> shared;
  ASSERT_TRUE(L::InitShared(*shared).ok());
  g_handler_latch<L> = &*shared;
  struct sigaction action {}, old {};
  action.sa_handler = &SetFromHandler<L>;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGALRM, &action, &old), 0);
  {
    absl::StatusOr<L> latch = L::Own(*shared, -1);
    ASSERT_TRUE(latch.ok()) << latch.status();
    // Our own handler, while we wait.
    itimerval timer{};
    timer.it_value.tv_usec = 20'000;
    ASSERT_EQ(setitimer(ITIMER_REAL, &timer, nullptr), 0);
    EXPECT_EQ(latch->Wait(kLostAfterMs), kLatchSet);
    latch->Reset();
    // Another process's handler.
    const pid_t child = Fork([&] {
      itimerval t{};
      t.it_value.tv_usec = 20'000;
      setitimer(ITIMER_REAL, &t, nullptr);
      pause();  // the handler sets the latch, then pause returns
      return 0;
    });
    EXPECT_EQ(latch->Wait(kLostAfterMs), kLatchSet);
    EXPECT_EQ(ExitCodeOf(child), 0);
  }
  sigaction(SIGALRM, &old, nullptr);
  L::DestroyShared(*shared);
}

void Ignore(int) {}

// A wait with a timeout lasts at least the timeout, though signals
// interrupt its sleep every few milliseconds, and reports kTimeout.
TYPED_TEST(LatchTest, TimeoutsAreHonouredThroughSignals) {
  using L = TypeParam;
  Shared<typename L::Shared> shared;
  ASSERT_TRUE(L::InitShared(*shared).ok());
  struct sigaction action {}, old {};
  action.sa_handler = &Ignore;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGALRM, &action, &old), 0);
  {
    absl::StatusOr<L> latch = L::Own(*shared, -1);
    ASSERT_TRUE(latch.ok()) << latch.status();
    itimerval every_3ms{};
    every_3ms.it_interval.tv_usec = 3000;
    every_3ms.it_value.tv_usec = 3000;
    ASSERT_EQ(setitimer(ITIMER_REAL, &every_3ms, nullptr), 0);
    const int64_t start = NowNs();
    EXPECT_EQ(latch->Wait(50), kTimeout);
    const int64_t waited_ms = (NowNs() - start) / 1'000'000;
    const itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    EXPECT_GE(waited_ms, 50) << "returned before its timeout";
  }
  sigaction(SIGALRM, &old, nullptr);
  L::DestroyShared(*shared);
}

// A set latch makes Wait return at once; a latch set before Own was called
// (by a setter that looked before the owner came) is found by the first wait.
TYPED_TEST(LatchTest, ASetBeforeTheWaitIsFound) {
  using L = TypeParam;
  Shared<typename L::Shared> shared;
  ASSERT_TRUE(L::InitShared(*shared).ok());
  L::Set(*shared);  // no owner yet: only is_set
  {
    absl::StatusOr<L> latch = L::Own(*shared, -1);
    ASSERT_TRUE(latch.ok()) << latch.status();
    EXPECT_EQ(latch->Wait(kLostAfterMs), kLatchSet);
    EXPECT_EQ(latch->Wait(kLostAfterMs), kLatchSet) << "not reset: still set";
    latch->Reset();
    EXPECT_EQ(latch->Wait(10), kTimeout);
  }
  L::DestroyShared(*shared);
}

// The latches whose support is process-wide (a signal handler, a blocked
// signal and its descriptor) can be owned once per process; the others any
// number of times.
TYPED_TEST(LatchTest, ProcessWideSupportIsOwnedOnce) {
  using L = TypeParam;
  Shared<typename L::Shared> a, b;
  ASSERT_TRUE(L::InitShared(*a).ok());
  ASSERT_TRUE(L::InitShared(*b).ok());
  {
    absl::StatusOr<L> first = L::Own(*a, -1);
    ASSERT_TRUE(first.ok());
    absl::StatusOr<L> second = L::Own(*b, -1);
    constexpr bool once = L::kKind == LatchKind::kSelfpipeSelect || L::kKind == LatchKind::kSelfpipePoll ||
                          L::kKind == LatchKind::kSignalfdEpoll;
    EXPECT_EQ(second.ok(), !once) << second.status();
    if (once) {
      EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
    }
  }
  // Disowned: the process may own one again.
  absl::StatusOr<L> again = L::Own(*a, -1);
  EXPECT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(a->state.owner_pid.load(), getpid());
  again = absl::StatusOr<L>(absl::CancelledError("dropped"));
  EXPECT_EQ(a->state.owner_pid.load(), 0) << "a dropped owner must disown its latch";
  L::DestroyShared(*a);
  L::DestroyShared(*b);
}

// A setter reads the owner's pid, the owner disowns and goes on, then the
// setter's wake-up lands (its signal, for the signal-based latches): the
// former owner must survive it. In a child, since the failure is a death.
TYPED_TEST(LatchTest, AWakeUpThatLandsAfterDisownIsHarmless) {
  using L = TypeParam;
  int signo = 0;
  if constexpr (L::kKind == LatchKind::kSelfpipeSelect || L::kKind == LatchKind::kSelfpipePoll) signo = SIGUSR1;
  if constexpr (L::kKind == LatchKind::kSignalfdEpoll) signo = SIGURG;
  if (signo == 0) BACKENDLAB_SKIP("a latch that signals") << "this latch's SetLatch sends no signal";
  Shared<typename L::Shared> shared;
  ASSERT_TRUE(L::InitShared(*shared).ok());
  const pid_t child = Fork([&] {
    {
      absl::StatusOr<L> latch = L::Own(*shared, -1);
      if (!latch.ok()) return 3;
    }
    // What a late SetLatch sends, sent after the disown.
    if (kill(getpid(), signo) != 0) return 4;
    return 0;
  });
  EXPECT_EQ(ExitCodeOf(child), 0) << "128+n: killed by signal n";
  L::DestroyShared(*shared);
}

// The epoll latches watch the postmaster-death pipe: its writer gone, a
// wait returns kPostmasterDeath.
TEST(PostmasterDeathTest, EpollLatchesReportIt) {
  Shared<SignalfdEpollLatch::Shared> a;
  Shared<EventfdEpollLatch::Shared> b;
  ASSERT_TRUE(SignalfdEpollLatch::InitShared(*a).ok());
  ASSERT_TRUE(EventfdEpollLatch::InitShared(*b).ok());
  absl::StatusOr<PostmasterDeathPipe> pipe = PostmasterDeathPipe::Create();
  ASSERT_TRUE(pipe.ok());
  EXPECT_TRUE(pipe->PostmasterAlive());
  absl::StatusOr<SignalfdEpollLatch> signalfd = SignalfdEpollLatch::Own(*a, pipe->watch_fd());
  absl::StatusOr<EventfdEpollLatch> eventfd = EventfdEpollLatch::Own(*b, pipe->watch_fd());
  ASSERT_TRUE(signalfd.ok() && eventfd.ok());
  EXPECT_EQ(signalfd->Wait(10), kTimeout);
  pipe->CloseOwnEnd();  // the postmaster is gone
  EXPECT_FALSE(pipe->PostmasterAlive());
  EXPECT_EQ(signalfd->Wait(kLostAfterMs), kPostmasterDeath);
  EXPECT_EQ(eventfd->Wait(kLostAfterMs), kPostmasterDeath);
  EventfdEpollLatch::DestroyShared(*b);
}

}  // namespace
}  // namespace backendlab::waits
