// PerfEvent names and lists, detection with a kernel that refuses (a fake
// perf_event_open), and the counters this kernel gives, whichever they are.
#include "profiling/perf_events.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util/skip.h"

namespace backendlab::profiling {
namespace {

std::string Message(const absl::Status& status) { return std::string(status.message()); }

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

::testing::AssertionResult BeginsWith(const std::string& text, const std::string& prefix) {
  if (text.rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not begin with '" << prefix << "'";
}

std::vector<PerfEvent> AllEvents() { return {std::begin(kAllPerfEvents), std::end(kAllPerfEvents)}; }

// ---- Names -------------------------------------------------------------------

TEST(PerfEventNamesTest, RoundTripInPerfsSpelling) {
  std::vector<std::string> names;
  for (PerfEvent e : kAllPerfEvents) {
    names.emplace_back(PerfEventName(e));
    absl::StatusOr<PerfEvent> parsed = ParsePerfEvent(PerfEventName(e));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, e);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"task-clock", "page-faults", "context-switches", "syscalls", "cycles",
                                             "instructions", "cache-misses", "stalled-cycles-frontend",
                                             "stalled-cycles-backend"}));
}

TEST(PerfEventNamesTest, GroupsExpandInOrderWithoutRepeats) {
  EXPECT_EQ(*ParsePerfEventList("all"), AllEvents());
  const std::vector<PerfEvent> software = {PerfEvent::kTaskClock, PerfEvent::kPageFaults,
                                           PerfEvent::kContextSwitches};
  EXPECT_EQ(*ParsePerfEventList("sw"), software);
  EXPECT_EQ(*ParsePerfEventList("software"), software);
  const std::vector<PerfEvent> hardware = {PerfEvent::kCycles, PerfEvent::kInstructions, PerfEvent::kCacheMisses,
                                           PerfEvent::kStalledCyclesFrontend, PerfEvent::kStalledCyclesBackend};
  EXPECT_EQ(*ParsePerfEventList("hw"), hardware);
  for (PerfEvent e : kAllPerfEvents) {
    EXPECT_EQ(IsHardware(e), std::find(hardware.begin(), hardware.end(), e) != hardware.end()) << PerfEventName(e);
  }
  EXPECT_EQ(*ParsePerfEventList("cycles,task-clock,cycles, sw ,syscalls,all"),
            (std::vector<PerfEvent>{PerfEvent::kCycles, PerfEvent::kTaskClock, PerfEvent::kPageFaults,
                                    PerfEvent::kContextSwitches, PerfEvent::kSyscalls, PerfEvent::kInstructions,
                                    PerfEvent::kCacheMisses, PerfEvent::kStalledCyclesFrontend,
                                    PerfEvent::kStalledCyclesBackend}));
}

TEST(PerfEventNamesTest, BadItemsAreNamed) {
  absl::StatusOr<std::vector<PerfEvent>> unknown = ParsePerfEventList("task-clock,bogus-event,cycles");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(Message(unknown.status()), "'bogus-event'"));
  for (PerfEvent e : kAllPerfEvents) EXPECT_TRUE(Contains(Message(unknown.status()), std::string(PerfEventName(e))));
  EXPECT_TRUE(Contains(Message(unknown.status()), "all"));

  absl::StatusOr<PerfEvent> single = ParsePerfEvent("Cycles");
  ASSERT_FALSE(single.ok());
  EXPECT_TRUE(Contains(Message(single.status()), "'Cycles'"));

  for (const char* list : {"", ",", "cycles,,sw", "cycles, ", " "}) {
    absl::StatusOr<std::vector<PerfEvent>> empty = ParsePerfEventList(list);
    ASSERT_FALSE(empty.ok()) << "'" << list << "'";
    EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_TRUE(Contains(Message(empty.status()), "empty perf event name")) << list;
  }
  EXPECT_TRUE(Contains(Message(ParsePerfEventList("cycles,,sw").status()), "item 2"));
}

// ---- A kernel that refuses -------------------------------------------------

int g_calls = 0;  // perf_event_open calls the fakes saw

std::string ParanoidLevel() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int level;
  return in >> level ? std::to_string(level) : "unreadable";
}

// Like a VM without a PMU, for an unprivileged user under perf_event_paranoid 3.
long RefusingOpen(perf_event_attr* attr, pid_t, int, int, unsigned long) {
  ++g_calls;
  errno = attr->type == PERF_TYPE_HARDWARE ? ENOENT : EACCES;
  return -1;
}

long NoPerfOpen(perf_event_attr*, pid_t, int, int, unsigned long) {
  ++g_calls;
  errno = ENOSYS;
  return -1;
}

// Like perf_event_paranoid 2: user-mode counting only.
long UserModeOnlyOpen(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  ++g_calls;
  if (!attr->exclude_kernel) {
    errno = EACCES;
    return -1;
  }
  return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

// Every test starts and ends with the real system call and an empty cache.
class PerfEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetPerfEventOpenForTesting(nullptr);
    g_calls = 0;
  }
  void TearDown() override { SetPerfEventOpenForTesting(nullptr); }
};

TEST_F(PerfEventsTest, RefusalsNameTheEventTheReasonAndTheWayOut) {
  SetPerfEventOpenForTesting(&RefusingOpen);

  for (PerfEvent e : {PerfEvent::kCycles, PerfEvent::kInstructions, PerfEvent::kStalledCyclesBackend}) {
    const absl::Status s = PerfEventAvailability(e);
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    EXPECT_EQ(Message(s), std::string(PerfEventName(e)) +
                              ": unavailable: the kernel has no hardware PMU for this CPU (ENOENT: typical of VMs)");
  }

  const absl::Status task_clock = PerfEventAvailability(PerfEvent::kTaskClock);
  EXPECT_TRUE(absl::IsUnavailable(task_clock)) << task_clock;
  EXPECT_TRUE(BeginsWith(Message(task_clock), "task-clock: unavailable: perf_event_open refused (EACCES)"));
  EXPECT_TRUE(Contains(Message(task_clock), "/proc/sys/kernel/perf_event_paranoid is " + ParanoidLevel()));

  // Without tracefs the tracepoint has no id to refuse; with it, EACCES.
  const absl::Status syscalls = PerfEventAvailability(PerfEvent::kSyscalls);
  EXPECT_TRUE(absl::IsUnavailable(syscalls)) << syscalls;
  EXPECT_TRUE(BeginsWith(Message(syscalls), "syscalls: unavailable: "));
  if (Message(syscalls).find("tracefs") != std::string::npos) {
    EXPECT_TRUE(Contains(Message(syscalls), "mount -t tracefs nodev /sys/kernel/tracing"));
  } else {
    EXPECT_TRUE(Contains(Message(syscalls), "perf_event_paranoid is " + ParanoidLevel()));
  }
}

TEST_F(PerfEventsTest, AvailabilityIsProbedOncePerEvent) {
  SetPerfEventOpenForTesting(&RefusingOpen);
  EXPECT_FALSE(PerfEventAvailability(PerfEvent::kCycles).ok());
  EXPECT_EQ(g_calls, 1);
  // EACCES: tried again in user mode only, as perf does.
  EXPECT_FALSE(PerfEventAvailability(PerfEvent::kPageFaults).ok());
  EXPECT_EQ(g_calls, 3);
  // Counted in the kernel: user mode only would read 0, so no second try.
  EXPECT_FALSE(PerfEventAvailability(PerfEvent::kContextSwitches).ok());
  EXPECT_EQ(g_calls, 4);
  const int probed = g_calls;
  for (PerfEvent e : {PerfEvent::kCycles, PerfEvent::kPageFaults, PerfEvent::kContextSwitches}) {
    EXPECT_FALSE(PerfEventAvailability(e).ok());
  }
  PerfCounters counters = PerfCounters::Open(std::vector<PerfEvent>{PerfEvent::kCycles, PerfEvent::kPageFaults});
  EXPECT_EQ(g_calls, probed) << "known refusals are not asked again";
}

TEST_F(PerfEventsTest, NoPerfAtAll) {
  SetPerfEventOpenForTesting(&NoPerfOpen);
  EXPECT_EQ(Message(PerfEventAvailability(PerfEvent::kPageFaults)),
            "page-faults: unavailable: perf_event_open not supported by this kernel (ENOSYS)");
}

TEST_F(PerfEventsTest, OpenNeverFailsAndReadsMinusOneForWhatIsMissing) {
  SetPerfEventOpenForTesting(&RefusingOpen);
  const std::vector<PerfEvent> all = AllEvents();
  std::vector<PerfEvent> twice = all;
  twice.insert(twice.end(), all.begin(), all.end());
  PerfCounters counters = PerfCounters::Open(twice);
  EXPECT_EQ(counters.events(), all);
  for (PerfEvent e : kAllPerfEvents) EXPECT_EQ(counters.Read(e), -1) << PerfEventName(e);
  std::vector<int64_t> values(all.size(), 0);
  counters.ReadAll(PerfCounters::PhaseEdge::kBegin, values);
  EXPECT_EQ(values, std::vector<int64_t>(all.size(), -1));
  counters.ReadAll(PerfCounters::PhaseEdge::kEnd, values);
  EXPECT_EQ(values, std::vector<int64_t>(all.size(), -1));

  const std::vector<absl::Status> missing = counters.Unavailable();
  ASSERT_EQ(missing.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(missing[i], PerfEventAvailability(all[i]));
    EXPECT_TRUE(BeginsWith(Message(missing[i]), std::string(PerfEventName(all[i])) + ": unavailable: "));
  }

  PerfCounters moved = std::move(counters);
  EXPECT_EQ(moved.events(), all);
  static_assert(!std::is_copy_constructible_v<PerfCounters> && std::is_nothrow_move_constructible_v<PerfCounters>);
}

TEST_F(PerfEventsTest, ReportUnavailableOncePrintsEachReasonOnce) {
  SetPerfEventOpenForTesting(&RefusingOpen);
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  ASSERT_NE(out, nullptr);
  ReportUnavailableOnce(PerfEvent::kCycles, out);
  ReportUnavailableOnce(PerfEvent::kCycles, out);
  ReportUnavailableOnce(PerfEvent::kTaskClock, out);
  ReportUnavailableOnce(PerfEvent::kCycles, out);
  std::fclose(out);
  const std::string printed(text, size);
  std::free(text);
  EXPECT_EQ(printed, "backendlab: " + Message(PerfEventAvailability(PerfEvent::kCycles)) + "\nbackendlab: " +
                         Message(PerfEventAvailability(PerfEvent::kTaskClock)) + "\n");
}

TEST_F(PerfEventsTest, FallsBackToUserModeAndRemembersIt) {
  SetPerfEventOpenForTesting(&UserModeOnlyOpen);
  const absl::Status task_clock = PerfEventAvailability(PerfEvent::kTaskClock);
  EXPECT_EQ(g_calls, 2);
  const absl::Status switches = PerfEventAvailability(PerfEvent::kContextSwitches);
  EXPECT_TRUE(BeginsWith(Message(switches), "context-switches: unavailable: perf_event_open refused (EACCES)"));
  if (!task_clock.ok()) {
    EXPECT_FALSE(internal::UnavailableReason(task_clock).empty()) << task_clock;
    BACKENDLAB_SKIP(test_util::kNeedsPerf) << "the kernel refuses even user-mode counting here: " << task_clock.message();
  }
  g_calls = 0;
  PerfCounters counters = PerfCounters::Open(std::vector<PerfEvent>{PerfEvent::kTaskClock});
  EXPECT_EQ(g_calls, 1) << "the user-mode attributes are used straight away";
  EXPECT_TRUE(counters.Unavailable().empty());
  EXPECT_GE(counters.Read(PerfEvent::kTaskClock), 0);
}

TEST_F(PerfEventsTest, AForkedChildInheritsWhatItsParentFound) {
  SetPerfEventOpenForTesting(&RefusingOpen);
  const absl::Status cycles = PerfEventAvailability(PerfEvent::kCycles);
  const int calls = g_calls;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool same = PerfEventAvailability(PerfEvent::kCycles) == cycles && g_calls == calls;
    _exit(same ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// ---- This kernel ---------------------------------------------------------------

// Whatever this machine allows: an available event counts, an unavailable one
// reads -1 and says why.
void ExpectReadsOrReason(const PerfCounters& counters, PerfEvent e) {
  const absl::Status available = PerfEventAvailability(e);
  if (available.ok()) {
    EXPECT_GE(counters.Read(e), 0) << PerfEventName(e);
  } else {
    EXPECT_EQ(counters.Read(e), -1) << PerfEventName(e);
    EXPECT_TRUE(BeginsWith(Message(available), std::string(PerfEventName(e)) + ": unavailable: "));
    EXPECT_FALSE(internal::UnavailableReason(available).empty()) << available;
  }
}

TEST_F(PerfEventsTest, TaskClockAndPageFaultsCountFreshPages) {
  const std::vector<PerfEvent> events = {PerfEvent::kTaskClock, PerfEvent::kPageFaults};
  PerfCounters counters = PerfCounters::Open(events);
  std::vector<int64_t> begin(events.size()), end(events.size());
  counters.ReadAll(PerfCounters::PhaseEdge::kBegin, begin);

  // Fresh anonymous pages fault once each on first write; no huge pages, or
  // one fault could map them all.
  constexpr size_t kPages = 64;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mapped = mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  madvise(mapped, kPages * page, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < kPages; ++i) static_cast<volatile char*>(mapped)[i * page] = 1;
  munmap(mapped, kPages * page);

  counters.ReadAll(PerfCounters::PhaseEdge::kEnd, end);
  for (size_t i = 0; i < events.size(); ++i) {
    ExpectReadsOrReason(counters, events[i]);
    if (PerfEventAvailability(events[i]).ok()) {
      EXPECT_GE(begin[i], 0) << PerfEventName(events[i]);
      EXPECT_GE(end[i], begin[i]) << PerfEventName(events[i]);
    } else {
      EXPECT_EQ(begin[i], -1);
      EXPECT_EQ(end[i], -1);
    }
  }
  if (PerfEventAvailability(PerfEvent::kPageFaults).ok()) {
    EXPECT_GE(end[1] - begin[1], static_cast<int64_t>(kPages));
  }
  if (PerfEventAvailability(PerfEvent::kTaskClock).ok()) {
    EXPECT_GT(end[0], begin[0]) << "touching 64 pages takes some nanoseconds";
  }
  EXPECT_EQ(counters.Unavailable().size(),
            static_cast<size_t>(!PerfEventAvailability(PerfEvent::kTaskClock).ok()) +
                !PerfEventAvailability(PerfEvent::kPageFaults).ok());
}

// A process (the "postmaster") that, once told through a pipe, forks children
// that each fault in kPages fresh pages and exit; it reaps them and waits to
// be told to exit. Its counters, opened from outside before the children are
// forked, must hold every child's faults once they have been reaped.
TEST_F(PerfEventsTest, OpenProcessCountsChildrenForkedAfterTheOpen) {
  if (!PerfEventAvailability(PerfEvent::kPageFaults).ok()) {
    BACKENDLAB_SKIP(test_util::kNeedsPerf) << PerfEventAvailability(PerfEvent::kPageFaults).message();
  }
  constexpr size_t kPages = 64;
  constexpr int kChildren = 4;
  int go[2], done[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    for (int i = 0; i < kChildren; ++i) {
      const pid_t child = fork();
      if (child == 0) {
        void* mapped = mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mapped == MAP_FAILED) _exit(1);
        madvise(mapped, kPages * page, MADV_NOHUGEPAGE);
        for (size_t p = 0; p < kPages; ++p) static_cast<volatile char*>(mapped)[p * page] = 1;
        _exit(0);
      }
      int status;
      if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) _exit(1);
    }
    if (write(done[1], "x", 1) != 1) _exit(1);
    if (read(go[0], &c, 1) != 1) _exit(1);
    _exit(0);
  }
  const std::vector<PerfEvent> events = {PerfEvent::kPageFaults, PerfEvent::kTaskClock};
  PerfCounters counters = PerfCounters::OpenProcess(parent, events);
  ASSERT_TRUE(counters.Unavailable().empty()) << counters.Unavailable()[0].message();
  const int64_t before = counters.Read(PerfEvent::kPageFaults);
  ASSERT_EQ(write(go[1], "x", 1), 1);
  char c;
  ASSERT_EQ(read(done[0], &c, 1), 1);
  const int64_t after = counters.Read(PerfEvent::kPageFaults);
  ASSERT_EQ(write(go[1], "x", 1), 1);
  int status;
  ASSERT_EQ(waitpid(parent, &status, 0), parent);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int fd : {go[0], go[1], done[0], done[1]}) close(fd);
  EXPECT_GE(after - before, static_cast<int64_t>(kChildren * kPages)) << "every child's fresh pages";
  EXPECT_GT(counters.Read(PerfEvent::kTaskClock), 0);
}

TEST_F(PerfEventsTest, OpenProcessOfNoProcessSaysWhy) {
  // A pid that was reaped a moment ago is free (pids are reused only after
  // wrapping around).
  const pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  const std::vector<PerfEvent> events = {PerfEvent::kTaskClock};
  PerfCounters counters = PerfCounters::OpenProcess(gone, events);
  ASSERT_EQ(counters.Unavailable().size(), 1u);
  EXPECT_TRUE(BeginsWith(Message(counters.Unavailable()[0]), "task-clock: unavailable: ")) << Message(counters.Unavailable()[0]);
  EXPECT_EQ(counters.Read(PerfEvent::kTaskClock), -1);
}

TEST_F(PerfEventsTest, EveryEventCountsOrSaysWhy) {
  PerfCounters counters = PerfCounters::Open(AllEvents());
  volatile uint64_t sink = 0;
  for (uint64_t i = 0; i < 100000; ++i) sink = sink + i * i;
  for (PerfEvent e : kAllPerfEvents) ExpectReadsOrReason(counters, e);
  if (PerfEventAvailability(PerfEvent::kInstructions).ok()) {
    EXPECT_GT(counters.Read(PerfEvent::kInstructions), 100000);
  }
  for (const absl::Status& missing : counters.Unavailable()) {
    EXPECT_TRUE(absl::IsUnavailable(missing)) << missing;
    EXPECT_FALSE(internal::UnavailableReason(missing).empty()) << missing;
  }
}

// The exact correction ReadAll documents: the syscalls delta holds the
// phase's calls and the closing read().
TEST_F(PerfEventsTest, SyscallsBetweenReadAllsHoldOneRead) {
  const std::vector<PerfEvent> events = {PerfEvent::kSyscalls, PerfEvent::kTaskClock, PerfEvent::kPageFaults};
  PerfCounters counters = PerfCounters::Open(events);
  const absl::Status available = PerfEventAvailability(PerfEvent::kSyscalls);
  if (!available.ok()) {
    EXPECT_EQ(counters.Read(PerfEvent::kSyscalls), -1);
    EXPECT_FALSE(internal::UnavailableReason(available).empty()) << available;
    BACKENDLAB_SKIP(test_util::SyscallCountsNeed()) << available.message();
  }
  std::vector<int64_t> begin(events.size()), end(events.size());
  counters.ReadAll(PerfCounters::PhaseEdge::kBegin, begin);
  for (int i = 0; i < 3; ++i) syscall(SYS_getppid);
  counters.ReadAll(PerfCounters::PhaseEdge::kEnd, end);
  EXPECT_EQ(end[0] - begin[0] - 1, 3);
}


// SyscallCounters: every kind asked for counted exactly, read in one read()
// that Between() takes out again; an unknown name is bad input.
TEST_F(PerfEventsTest, SyscallCountersCountEachKindExactly) {
  constexpr std::string_view kNames[] = {"getppid", "read", "getpid"};
  absl::StatusOr<SyscallCounters> counters = SyscallCounters::Open(kNames);
  const absl::Status available = PerfEventAvailability(PerfEvent::kSyscalls);
  if (!available.ok()) {
    EXPECT_TRUE(absl::IsUnavailable(counters.status())) << counters.status();
    BACKENDLAB_SKIP(test_util::SyscallCountsNeed()) << available.message();
  }
  ASSERT_TRUE(counters.ok()) << counters.status();
  EXPECT_EQ(counters->names(), (std::vector<std::string>{"getppid", "read", "getpid"}));
  SyscallCounters::Counts begin, end;
  ASSERT_TRUE(counters->Read(begin));
  for (int i = 0; i < 5; ++i) syscall(SYS_getppid);
  for (int i = 0; i < 2; ++i) syscall(SYS_getpid);
  ASSERT_TRUE(counters->Read(end));
  const SyscallCounters::Counts d = counters->Between(begin, end);
  EXPECT_EQ(d.by_kind, (std::vector<int64_t>{5, 0, 2}));
  EXPECT_EQ(d.total, 7);

  constexpr std::string_view kUnknown[] = {"no_such_call"};
  EXPECT_TRUE(absl::IsInvalidArgument(SyscallCounters::Open(kUnknown).status()));
  EXPECT_FALSE(HasSyscallTracepoint("no_such_call"));
  EXPECT_TRUE(HasSyscallTracepoint("getppid"));
}

}  // namespace
}  // namespace backendlab::profiling
