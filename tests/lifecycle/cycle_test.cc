// lifecycle::RunCycle in-process: every connection accounted for, every child reaped, faults injected and reported.
#include "lifecycle/cycle.h"

#include <signal.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/interrupt.h"
#include "base/start_layout.h"
#include "buffers/exit_check.h"
#include "buffers/refcount_table.h"
#include "buffers/shared_buffers.h"
#include "gtest/gtest.h"
#include "base/resource_usage.h"
#include "lifecycle/backend.h"
#include "lifecycle/backend_record.h"
#include "lifecycle/shared_pool.h"
#include "lifecycle/cycle_summary.h"
#include "profiling/perf_events.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/temp_dir.h"
#include "tests/test_util/skip.h"
#include "waits/wait_set.h"

namespace backendlab::lifecycle {
namespace {

using buffers::ExitCheckPolicy;
using buffers::Layout;
using test_util::ChildrenOf;

bool IsEmptyDir(const std::string& dir) {
  return std::filesystem::is_directory(dir) && std::filesystem::is_empty(dir);
}

buffers::SharedBuffers Size(const char* text) {
  absl::StatusOr<buffers::SharedBuffers> size = buffers::ParseSharedBuffers(text);
  BACKENDLAB_CHECK(size.ok());
  return *size;
}

// Small enough that the whole suite runs in seconds under ASan on a slow VM.
CycleOptions SmallOptions(Mode mode, Layout layout, int64_t connections = 20) {
  CycleOptions o;
  o.mode = mode;
  o.backend.layout = layout;
  o.backend.shared_buffers = Size("128MB");
  o.backend.work_lookups = 10;
  o.connections = connections;
  o.warmup = 2;
  o.baseline_forks = 5;
  return o;
}

// `o` with every measured backend's record appended to `records` as it
// arrives (the result keeps histograms, not records).
CycleOptions WithRecords(CycleOptions o, std::vector<BackendRecord>& records) {
  o.on_record = [&records](const BackendRecord& r) { records.push_back(r); };
  return o;
}

template <typename T>
T Median(std::vector<T> v) {
  BACKENDLAB_CHECK(!v.empty());
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

int64_t MedianExitCheckFaults(const std::vector<BackendRecord>& records) {
  std::vector<int64_t> faults;
  for (const BackendRecord& r : records) faults.push_back(r.phase[static_cast<int>(Phase::kExitCheck)].minor_faults);
  return Median(faults);
}

// "hash-keys" -> "hash_keys": a test name takes no '-'.
std::string LayoutParamName(const testing::TestParamInfo<Layout>& info) {
  std::string name(buffers::LayoutName(info.param));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

constexpr Layout kLayouts[] = {Layout::kArray, Layout::kBytes, Layout::kHash, Layout::kHashKeys, Layout::kArrayTouched};

// Each test gets a private TMPDIR (PrivateTmpdirTest), so that a socket
// directory left behind is seen and parallel tests never share one.
class CycleTest : public test_util::PrivateTmpdirTest {
 protected:
  // What every run must leave behind, failed or not: no child (running or
  // zombie) of this process, and nothing in TMPDIR.
  void ExpectNothingLeft() {
    EXPECT_TRUE(ChildrenOf(getpid()).empty()) << "a child of the test process survived the run";
    EXPECT_TRUE(IsEmptyDir(tmpdir_)) << "files left in " << tmpdir_;
  }
};

class CycleLayoutTest : public CycleTest, public testing::WithParamInterface<Layout> {};

// ---- options ----------------------------------------------------------------

TEST(CycleModeTest, ParseModeAcceptsTheModeNames) {
  for (Mode mode : {Mode::kFork, Mode::kInproc, Mode::kThread, Mode::kPrefork}) {
    absl::StatusOr<Mode> parsed = ParseMode(ModeName(mode));
    ASSERT_TRUE(parsed.ok()) << ModeName(mode);
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_EQ(ModeName(Mode::kFork), "fork");
  EXPECT_EQ(ModeName(Mode::kInproc), "inproc");
  EXPECT_EQ(ModeName(Mode::kThread), "thread");
}

TEST(CycleModeTest, ParseModeRejectsOtherNamesAsUsageErrors) {
  for (const char* bad : {"threads", "", "Fork", "fork ", "inproc,fork"}) {
    absl::StatusOr<Mode> parsed = ParseMode(bad);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "'";
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << parsed.status();
    EXPECT_NE(parsed.status().message().find("mode"), std::string_view::npos) << parsed.status();
  }
}

TEST(CycleValidateTest, AcceptsDefaultsAndSmallConfigurations) {
  EXPECT_TRUE(ValidateCycleOptions(CycleOptions{}).ok());
  EXPECT_TRUE(ValidateCycleOptions(SmallOptions(Mode::kFork, Layout::kHash)).ok());
  EXPECT_TRUE(ValidateCycleOptions(SmallOptions(Mode::kInproc, Layout::kArray)).ok());
  CycleOptions by_duration = SmallOptions(Mode::kFork, Layout::kHash);
  by_duration.connections = 0;
  by_duration.duration = absl::Milliseconds(100);
  EXPECT_TRUE(ValidateCycleOptions(by_duration).ok());
  CycleOptions no_warmup = SmallOptions(Mode::kFork, Layout::kHash);
  no_warmup.warmup = 0;
  EXPECT_TRUE(ValidateCycleOptions(no_warmup).ok());
  CycleOptions as_many_clients_as_connections = SmallOptions(Mode::kFork, Layout::kHash, 4);
  as_many_clients_as_connections.clients = 4;
  EXPECT_TRUE(ValidateCycleOptions(as_many_clients_as_connections).ok());
}

TEST(CycleValidateTest, RejectsBadOptionsAsUsageErrors) {
  struct Case {
    const char* what;
    void (*mutate)(CycleOptions&);
  };
  const Case kCases[] = {
      {"no clients", [](CycleOptions& o) { o.clients = 0; }},
      {"negative clients", [](CycleOptions& o) { o.clients = -1; }},
      {"too many clients", [](CycleOptions& o) { o.clients = 1025; o.connections = 2000; }},
      {"negative connections", [](CycleOptions& o) { o.connections = -3; }},
      {"neither connections nor duration", [](CycleOptions& o) { o.connections = 0; o.duration = absl::ZeroDuration(); }},
      {"negative duration", [](CycleOptions& o) { o.connections = 0; o.duration = absl::Milliseconds(-5); }},
      {"more clients than connections", [](CycleOptions& o) { o.clients = 5; o.connections = 2; }},
      {"inproc with two clients", [](CycleOptions& o) { o.mode = Mode::kInproc; o.clients = 2; }},
      {"inproc with a killed backend (it would kill this process)",
       [](CycleOptions& o) { o.mode = Mode::kInproc; o.backend.kill_backend = 3; }},
      {"negative warmup", [](CycleOptions& o) { o.warmup = -1; }},
      {"negative work pins", [](CycleOptions& o) { o.backend.work_pins = -1; }},
      {"negative work lookups", [](CycleOptions& o) { o.backend.work_lookups = -1; }},
      {"negative leak pins", [](CycleOptions& o) { o.backend.leak_pins = -1; }},
      {"negative hold", [](CycleOptions& o) { o.hold = -1; }},
      {"hold in inproc mode (no backend process to hold)", [](CycleOptions& o) { o.mode = Mode::kInproc; o.hold = 2; }},
      {"more held than kMaxHold", [](CycleOptions& o) { o.hold = kMaxHold + 1; }},
      {"a pool too small for the held connections and the clients",
       [](CycleOptions& o) { o.mode = Mode::kPrefork; o.hold = 2; o.pool = 2; }},
      {"a sampler in thread mode (its timer is a process's)",
       [](CycleOptions& o) { o.mode = Mode::kThread; o.sampler = profiling::SamplerOptions{}; }},
      {"thread memory without thread mode", [](CycleOptions& o) { o.thread_memory = ThreadMemory::kReuse; }},
      {"a pool without prefork mode", [](CycleOptions& o) { o.pool = 3; }},
      {"a negative pool", [](CycleOptions& o) { o.mode = Mode::kPrefork; o.pool = -1; }},
      {"a pool beyond kMaxPool", [](CycleOptions& o) { o.mode = Mode::kPrefork; o.pool = kMaxPool + 1; }},
      {"a sampler in prefork mode",
       [](CycleOptions& o) { o.mode = Mode::kPrefork; o.sampler = profiling::SamplerOptions{}; }},
      {"reaping by pidfd in thread mode (a thread is joined)",
       [](CycleOptions& o) { o.mode = Mode::kThread; o.reap = Reap::kPidfd; }},
  };
  for (const Case& c : kCases) {
    CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash);
    c.mutate(o);
    const absl::Status s = ValidateCycleOptions(o);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.what << ": " << s;
    EXPECT_FALSE(s.message().empty()) << c.what;
    // A module words its fields (`clients`); only tools/ names a flag.
    EXPECT_EQ(s.message().find("--"), std::string_view::npos) << c.what << " names a flag: " << s;
  }
}

TEST_F(CycleTest, InvalidOptionsRunNothing) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash);
  o.clients = 5;
  o.connections = 2;
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  ExpectNothingLeft();
}

// ---- fork mode: completion ---------------------------------------------------

TEST_P(CycleLayoutTest, ForkCompletesEveryConnection) {
  const CycleOptions o = SmallOptions(Mode::kFork, GetParam());
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->connections, o.connections);
  EXPECT_EQ(result->failed_connections, 0);
  EXPECT_FALSE(result->interrupted);
  EXPECT_GT(result->wall_ns, 0);
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
  EXPECT_EQ(result->connect_latency_ns.count(), static_cast<int64_t>(o.connections));
  EXPECT_EQ(result->baseline_fork_ns.count(), static_cast<int64_t>(2 * o.baseline_forks));  // before and after

  std::set<int64_t> sequences;
  std::set<pid_t> pids;
  for (const BackendRecord& r : result_records) {
    SCOPED_TRACE(testing::Message() << "connection " << r.sequence);
    sequences.insert(r.sequence);
    pids.insert(r.pid);
    EXPECT_EQ(r.outcome, BackendOutcome::kExited);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.exit_status, 0);
    EXPECT_GT(r.pid, 0);
    EXPECT_NE(r.pid, getpid());
    for (Phase p : kAllPhases) EXPECT_TRUE(r.Done(p)) << PhaseName(p);
    // One clock for all processes: the timestamps follow the life in order.
    EXPECT_LE(r.accept_ns, r.child_start_ns);
    EXPECT_LE(r.child_start_ns, r.ready_ns);
    EXPECT_LE(r.ready_ns, r.terminate_ns);
    EXPECT_LE(r.terminate_ns, r.exit_ns);
    EXPECT_LE(r.exit_ns, r.reaped_ns);
    EXPECT_EQ(r.leaks_found, 0);
  }
  // Warm-up connections are the first `warmup` accepted; the measured ones follow.
  ASSERT_EQ(sequences.size(), static_cast<size_t>(o.connections));
  EXPECT_EQ(*sequences.begin(), o.warmup);
  EXPECT_EQ(*sequences.rbegin(), o.warmup + o.connections - 1);
  EXPECT_EQ(pids.size(), static_cast<size_t>(o.connections)) << "each connection has its own backend";

  const CycleSummary s = Summarize(*result);
  EXPECT_EQ(s.exited, o.connections);
  EXPECT_EQ(s.crashed, 0);
  EXPECT_EQ(s.leaks, 0);
  for (Phase p : kAllPhases) EXPECT_EQ(s.phases[static_cast<int>(p)].wall_us.count, static_cast<size_t>(o.connections));
  ExpectNothingLeft();
}

INSTANTIATE_TEST_SUITE_P(Layouts, CycleLayoutTest, testing::ValuesIn(kLayouts), LayoutParamName);

TEST_F(CycleTest, ForkWithSeveralClientsCompletesEveryConnection) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash, 40);
  o.clients = 4;
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->connections, o.connections);
  EXPECT_EQ(result->failed_connections, 0);
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
  std::set<int64_t> sequences;
  for (const BackendRecord& r : result_records) {
    sequences.insert(r.sequence);
    EXPECT_EQ(r.outcome, BackendOutcome::kExited) << "connection " << r.sequence;
    for (Phase p : kAllPhases) EXPECT_TRUE(r.Done(p)) << "connection " << r.sequence << ": " << PhaseName(p);
  }
  EXPECT_EQ(sequences.size(), static_cast<size_t>(o.connections));
  // One warm-up rule, the postmaster's sequence numbers, for the clients too:
  // the measured connections are exactly warmup .. warmup + N - 1, and the
  // clients counted (and timed) exactly those.
  EXPECT_EQ(*sequences.begin(), o.warmup);
  EXPECT_EQ(*sequences.rbegin(), o.warmup + o.connections - 1);
  EXPECT_EQ(result->connect_latency_ns.count(), o.connections);
  EXPECT_EQ(result->backends.exited, o.connections);
  ExpectNothingLeft();
}

// Held connections come first and stay, idle, while the loop runs: their
// backends are none of the measured ones, the server's figures are the
// loop's alone, and every one is reaped after.
TEST_F(CycleTest, HeldConnectionsLiveBesideTheLoopAndAreLeftOutOfItsFigures) {
  for (Mode mode : {Mode::kFork, Mode::kThread, Mode::kPrefork}) {
    SCOPED_TRACE(ModeName(mode));
    CycleOptions plain = SmallOptions(mode, Layout::kHash, 30);
    plain.clients = 2;
    absl::StatusOr<CycleResult> without = RunCycle(plain);
    ASSERT_TRUE(without.ok()) << without.status();
    CycleOptions o = plain;
    o.hold = 16;
    std::vector<BackendRecord> records;
    absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, records));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->connections, o.connections);
    ASSERT_EQ(records.size(), static_cast<size_t>(o.connections));
    std::set<int64_t> sequences;
    for (const BackendRecord& r : records) sequences.insert(r.sequence);
    // The held connections take the first sequence numbers, then the warm-up.
    EXPECT_EQ(*sequences.begin(), o.hold + o.warmup);
    EXPECT_EQ(*sequences.rbegin(), o.hold + o.warmup + o.connections - 1);
    EXPECT_EQ(result->backends.exited, o.connections);
    EXPECT_GT(result->hold_open_ns, 0);
    ASSERT_TRUE(result->held_memory.has_value()) << "each held backend's memory, read while they were held";
    EXPECT_GT(result->held_memory->private_kb, 0);
    // A thread's page tables are the process's: what 16 threads add may
    // round down to none per thread.
    if (mode == Mode::kThread) {
      EXPECT_GE(result->held_memory->page_tables_kb, 0);
    } else {
      EXPECT_GT(result->held_memory->page_tables_kb, 0);
    }
    EXPECT_EQ(result->server.connections, o.warmup + o.connections) << "the server counts the loop's connections alone";
    EXPECT_GT(result->server.postmaster_cpu_ns, 0);
    EXPECT_LT(result->server.postmaster_cpu_ns, result->server.cpu_ns);
    // A mock backend faults in ~90 pages: were the 16 held ones counted over
    // the loop's 32 connections, each would carry half a backend's more.
    EXPECT_LT(PerConnectionOf(result->server).minor_faults, 1.3 * PerConnectionOf(without->server).minor_faults + 5);
    EXPECT_EQ(without->hold_open_ns, -1);
    EXPECT_FALSE(without->held_memory.has_value());
    ExpectNothingLeft();
  }
}

TEST_F(CycleTest, ForkByDurationStopsAndRecordsEveryMeasuredConnection) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash);
  o.connections = 0;
  o.duration = absl::Milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->connections, 0);
  EXPECT_EQ(result->failed_connections, 0);
  EXPECT_EQ(result_records.size(), static_cast<size_t>(result->connections));
  // No new connection starts once the duration is over; the last one may
  // have completed just before, so wall_ns (first to last measured
  // completion) can fall short of it, but the run itself cannot.
  EXPECT_GT(result->wall_ns, 0);
  EXPECT_GE(elapsed, absl::ToChronoMilliseconds(o.duration));
  ExpectNothingLeft();
}

// ---- cleanup -----------------------------------------------------------------

TEST_F(CycleTest, NoChildAndNoSocketDirectoryAfterARun) {
  const CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash, 10);
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(result->socket_dir.empty());
  EXPECT_EQ(result->socket_dir.rfind(tmpdir_ + "/", 0), 0u) << result->socket_dir << " is not under TMPDIR " << tmpdir_;
  EXPECT_FALSE(std::filesystem::exists(result->socket_dir));
  ExpectNothingLeft();
}

// A start of its own layout: every connection served as without one, and
// the directory's name carries the layout's extra characters (its other
// parts, base/start_layout_test.cc).
TEST_F(CycleTest, ARandomisedStartServesEveryConnectionAndNamesItsDirectoryByItsLayout) {
  for (uint64_t seed : {StartSeed(1, 0, 0), StartSeed(1, 1, 0), StartSeed(1, 0, 1)}) {
    CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash, 10);
    o.start_seed = seed;
    std::vector<BackendRecord> records;
    absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, records));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->connections, 10);
    const std::string name = std::filesystem::path(result->socket_dir).filename();
    const int chars = DrawStartLayout(seed).name_chars;
    EXPECT_EQ(name.rfind("backendlab" + std::string(static_cast<size_t>(chars), '_') + ".", 0), 0u)
        << name << " for " << chars << " extra characters";
    ExpectNothingLeft();
  }
}

// Syscall counts appear exactly when the kernel allows them (tracefs mounted,
// perf_event_open permitted); otherwise the result says why and every count
// is -1. The backend's own phases are counted; fork and reap never are.
TEST_F(CycleTest, SyscallCountsArePresentExactlyWhenTheKernelAllowsThem) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kArray, 5);
  o.backend.count_syscalls = true;
  // 1GB: a 512 kB table, above glibc's default mmap threshold, so its calloc
  // is an mmap whatever the heap holds.
  o.backend.shared_buffers = *buffers::ParseSharedBuffers("1GB");
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  const absl::Status available = profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls);
  EXPECT_EQ(result->syscalls_counted, available.ok());
  // The one availability path: a missing syscall count is named as any
  // other missing counter is, once.
  int named = 0;
  for (const absl::Status& why : result->counters_unavailable) named += std::string(why.message()).starts_with("syscalls: unavailable: ");
  EXPECT_EQ(named, available.ok() ? 0 : 1);
  ASSERT_EQ(result_records.size(), 5u);
  for (const BackendRecord& r : result_records) {
    for (Phase p : kAllPhases) {
      const int64_t n = r.phase[static_cast<int>(p)].syscalls;
      if (available.ok() && p != Phase::kFork && p != Phase::kReap) {
        EXPECT_GE(n, 0) << PhaseName(p);
      } else {
        EXPECT_EQ(n, -1) << PhaseName(p);
      }
    }
    if (available.ok()) {
      // The table's calloc is an mmap.
      EXPECT_GE(r.phase[static_cast<int>(Phase::kInitBuffers)].syscalls, 1);
    }
  }
  ExpectNothingLeft();
}

// With queries, each backend answers every one of them through the wait
// strategy's set, in its work phase, and the client measures each round
// trip: a forked backend, a backend thread (two at once, each with a latch
// of its own) and a pre-forked one. Where the kernel counts system calls,
// the work phase shows the strategy's price: per-call makes a set (at least
// 6 calls) per query, long-lived at most 4 per query (read, wait, read,
// answer) besides its set-up.
TEST_F(CycleTest, QueriesAreServedThroughEachWaitStrategyInEveryServerMode) {
  constexpr int64_t kQueries = 50;
  bool counted = true;
  for (Mode mode : {Mode::kFork, Mode::kThread, Mode::kPrefork}) {
    for (waits::WaitStrategy strategy : waits::kAllWaitStrategies) {
      SCOPED_TRACE(testing::Message() << ModeName(mode) << " " << waits::WaitStrategyName(strategy));
      CycleOptions o = SmallOptions(mode, Layout::kHash, 4);
      o.clients = 2;
      o.backend.queries = kQueries;
      o.backend.wait = strategy;
      o.backend.count_syscalls = true;
      std::vector<BackendRecord> records;
      absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, records));
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(result->connections, 4);
      EXPECT_EQ(result->failed_connections, 0);
      EXPECT_EQ(result->query_latency_ns.count(), 4 * kQueries);
      ASSERT_EQ(records.size(), 4u);
      for (const BackendRecord& r : records) {
        EXPECT_EQ(r.outcome, BackendOutcome::kExited) << "status " << r.exit_status;
        const int64_t work = r.phase[static_cast<int>(Phase::kWork)].syscalls;
        if (!result->syscalls_counted) {
          counted = false;
          continue;
        }
        if (strategy == waits::WaitStrategy::kPerCall) {
          EXPECT_GE(work, 6 * kQueries);
        }
        if (strategy == waits::WaitStrategy::kLongLived) {
          EXPECT_LE(work, 4 * kQueries + 20);
        }
      }
      EXPECT_EQ(result->backends.crashed, 0);
    }
  }
  ExpectNothingLeft();
  if (!counted) {
    BACKENDLAB_SKIP(test_util::SyscallCountsNeed())
        << "the queries ran and were checked, their waits' system calls not: the kernel cannot count them here";
  }
}

TEST(CycleValidateTest, QueriesNeedForkMode) {
  CycleOptions o = SmallOptions(Mode::kInproc, Layout::kHash);
  o.backend.queries = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateCycleOptions(o)));
  o.mode = Mode::kFork;
  EXPECT_TRUE(ValidateCycleOptions(o).ok());
  o.backend.queries = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateCycleOptions(o)));
}

TEST_F(CycleTest, NoChildAndNoFilesAfterAnUnusableTmpdir) {
  setenv("TMPDIR", "/nonexistent-dir", 1);
  absl::StatusOr<CycleResult> result = RunCycle(SmallOptions(Mode::kFork, Layout::kHash, 10));
  ASSERT_FALSE(result.ok());
  EXPECT_FALSE(absl::IsInvalidArgument(result.status())) << "a run failure, not a usage error: " << result.status();
  EXPECT_NE(result.status().message().find("/nonexistent-dir"), std::string_view::npos) << result.status();
  ExpectNothingLeft();
}

TEST_F(CycleTest, NoChildAndNoFilesWhenTheSocketPathIsTooLong) {
  // The directory can be made but the socket in it cannot be bound: sun_path
  // holds 108 bytes.
  const std::string deep = tmpdir_ + "/" + std::string(100, 'd');
  ASSERT_TRUE(std::filesystem::create_directory(deep));
  setenv("TMPDIR", deep.c_str(), 1);
  absl::StatusOr<CycleResult> result = RunCycle(SmallOptions(Mode::kFork, Layout::kHash, 10));
  ASSERT_FALSE(result.ok());
  EXPECT_FALSE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_TRUE(IsEmptyDir(deep)) << "the temporary directory was left in " << deep;
  EXPECT_TRUE(ChildrenOf(getpid()).empty());
  std::filesystem::remove(deep);
  ExpectNothingLeft();
}

// ---- bounded figures --------------------------------------------------------------

// Every histogram of a result, and the records it keeps whole, in bytes.
size_t Footprint(const CycleResult& r) {
  size_t buckets = r.connect_latency_ns.buckets_used() + r.baseline_fork_ns.buckets_used() +
                   r.backends.wait_ns.buckets_used() + r.backends.lifetime_ns.buckets_used();
  for (const PhaseHistograms& h : r.backends.phases) {
    buckets += h.wall_ns.buckets_used() + h.cpu_ns.buckets_used() + h.minor_faults.buckets_used() +
               h.major_faults.buckets_used() + h.syscalls.buckets_used();
    for (const Histogram& e : h.events) buckets += e.buckets_used();
  }
  return buckets * sizeof(uint64_t) + r.backends.incidents.capacity() * sizeof(BackendRecord);
}

// What a result holds is bounded by constants, whatever the number of
// connections: every backend here leaks a pin, so every one is an incident,
// and only the first kMaxIncidents are kept whole.
TEST_F(CycleTest, ResultSizeDoesNotDependOnTheNumberOfConnections) {
  constexpr size_t kHistograms = 4 + kNumPhases * (5 + kNumPerfEvents);
  constexpr size_t kBound = kHistograms * Histogram::kMaxBuckets * sizeof(uint64_t) + kMaxIncidents * sizeof(BackendRecord);
  for (int64_t connections : {20, 300}) {
    SCOPED_TRACE(connections);
    CycleOptions o = SmallOptions(Mode::kFork, Layout::kArray, connections);
    o.backend.exit_check = ExitCheckPolicy::kAlways;
    o.backend.leak_pins = 1;
    absl::StatusOr<CycleResult> result = RunCycle(o);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->backends.exited, connections);
    EXPECT_EQ(result->backends.leaks, connections);
    EXPECT_EQ(result->backends.incidents.size(), kMaxIncidents);
    EXPECT_EQ(result->backends.incidents_dropped, connections - static_cast<int64_t>(kMaxIncidents));
    EXPECT_LE(Footprint(*result), kBound);
    // Figures that are exact whatever the bound: counts and sums.
    EXPECT_EQ(result->backends.phases[static_cast<int>(Phase::kExitCheck)].wall_ns.count(), connections);
    EXPECT_EQ(result->connect_latency_ns.count(), connections);
  }
  ExpectNothingLeft();
}

TEST_F(CycleTest, MergeRoundAddsCountsAndHistograms) {
  const CycleOptions o = SmallOptions(Mode::kInproc, Layout::kHash, 10);
  absl::StatusOr<CycleResult> first = RunCycle(o);
  absl::StatusOr<CycleResult> second = RunCycle(o);
  ASSERT_TRUE(first.ok() && second.ok());
  CycleResult total;
  MergeRound(*first, total);
  MergeRound(*second, total);
  EXPECT_EQ(total.connections, 20);
  EXPECT_EQ(total.backends.exited, 20);
  EXPECT_EQ(total.connect_latency_ns.count(), 20);
  EXPECT_EQ(total.baseline_fork_ns.count(), first->baseline_fork_ns.count() + second->baseline_fork_ns.count());
  EXPECT_EQ(total.wall_ns, first->wall_ns + second->wall_ns);
  const Histogram& work = total.backends.phases[static_cast<int>(Phase::kWork)].wall_ns;
  EXPECT_EQ(work.count(), 20);
  EXPECT_EQ(work.sum(), first->backends.phases[static_cast<int>(Phase::kWork)].wall_ns.sum() +
                            second->backends.phases[static_cast<int>(Phase::kWork)].wall_ns.sum());
  EXPECT_FALSE(total.interrupted);
  ExpectNothingLeft();
}

// ---- stops and failures on the way ------------------------------------------------

class CycleStopTest : public CycleTest {
 protected:
  void TearDown() override {
    ResetStopRequestForTesting();
    CycleTest::TearDown();
  }
};

// A stop asked for before a run (^C during the previous configuration of a
// matrix) runs nothing; RunCycle never forgets it.
TEST_F(CycleStopTest, AStopRequestedBeforeTheRunRunsNothing) {
  RequestStop(SIGTERM);
  absl::StatusOr<CycleResult> result = RunCycle(SmallOptions(Mode::kFork, Layout::kHash, 10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->interrupted);
  EXPECT_EQ(result->connections, 0);
  EXPECT_EQ(StopSignal(), SIGTERM) << "the request is the caller's to see";
  ExpectNothingLeft();
}

// Each stop signal, arriving mid-run: the run stops early, every backend
// reaped, the directory removed, and the signal is still the process's.
TEST_F(CycleStopTest, AStopSignalMidRunStopsCleanly) {
  for (Mode mode : {Mode::kFork, Mode::kThread, Mode::kPrefork}) {
    for (int signal : kStopSignals) {
      SCOPED_TRACE(testing::Message() << ModeName(mode) << " " << signal);
      ResetStopRequestForTesting();
      CycleOptions o = SmallOptions(mode, Layout::kHash, 1000);
      int seen = 0;
      o.on_record = [&](const BackendRecord&) {
        if (++seen == 5) raise(signal);  // RunCycle installed the handlers
      };
      absl::StatusOr<CycleResult> result = RunCycle(o);
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_TRUE(result->interrupted);
      EXPECT_LT(result->connections, o.connections);
      EXPECT_EQ(StopSignal(), signal);
      ExpectNothingLeft();
    }
  }
}

// The socket directory removed from outside mid-run: the next connect fails
// for good (ENOENT), and the run ends with that line instead of hanging.
TEST_F(CycleTest, SocketDirectoryRemovedMidRunEndsTheRunWithOneLine) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash, 1000);
  int seen = 0;
  o.on_record = [&](const BackendRecord&) {
    if (++seen != 3) return;
    for (const auto& entry : std::filesystem::directory_iterator(tmpdir_)) std::filesystem::remove_all(entry.path());
  };
  absl::StatusOr<CycleResult> result = RunCycle(o);
  ASSERT_FALSE(result.ok());
  EXPECT_FALSE(absl::IsInvalidArgument(result.status())) << result.status();
  const std::string message(result.status().message());
  EXPECT_NE(message.find("connect to "), std::string::npos) << message;
  EXPECT_NE(message.find("ENOENT"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  ExpectNothingLeft();
}

TEST(CycleValidateTest, ClientsBeyondTheOpenFileLimitAreAUsageError) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  CycleOptions o;
  o.clients = 64;
  o.connections = 100;
  const absl::Status s = ValidateCycleOptions(o);
  o.clients = 8;
  const absl::Status fits = ValidateCycleOptions(o);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("ulimit -n"), std::string_view::npos) << s;
  EXPECT_TRUE(fits.ok()) << fits;
}

// ---- a backend killed mid-run ----------------------------------------------------

TEST_F(CycleTest, KilledBackendIsReportedAndTheRunContinues) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash);
  constexpr int64_t kKilled = 7;
  ASSERT_GE(kKilled, o.warmup);
  o.backend.kill_backend = kKilled;
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();

  // The killed backend never sends "ready": its client counts a failed
  // connection, every other connection completes, and all N have a record.
  EXPECT_EQ(result->connections, o.connections - 1);
  EXPECT_EQ(result->failed_connections, 1);
  EXPECT_EQ(result->connect_latency_ns.count(), static_cast<int64_t>(o.connections - 1));
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
  int crashed = 0;
  for (const BackendRecord& r : result_records) {
    SCOPED_TRACE(testing::Message() << "connection " << r.sequence);
    if (r.sequence != kKilled) {
      EXPECT_EQ(r.outcome, BackendOutcome::kExited);
      for (Phase p : kAllPhases) EXPECT_TRUE(r.Done(p)) << PhaseName(p);
      continue;
    }
    ++crashed;
    EXPECT_EQ(r.outcome, BackendOutcome::kCrashed);
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_GT(r.pid, 0);
    // It died in `work`: what it had measured before is kept, nothing after.
    EXPECT_TRUE(r.Done(Phase::kFork));
    EXPECT_TRUE(r.Done(Phase::kInitBuffers));
    EXPECT_TRUE(r.Done(Phase::kInitCatcache));
    EXPECT_FALSE(r.Done(Phase::kWork));
    EXPECT_FALSE(r.Done(Phase::kExitCheck));
    EXPECT_FALSE(r.Done(Phase::kTeardown));
    EXPECT_FALSE(r.Done(Phase::kReap)) << "it never reached _exit";
  }
  EXPECT_EQ(crashed, 1);
  const CycleSummary s = Summarize(*result);
  EXPECT_EQ(s.crashed, 1);
  EXPECT_EQ(s.exited, o.connections - 1);
  ExpectNothingLeft();
}

// ---- a planted pin leak ------------------------------------------------------------

struct LeakCase {
  Layout layout;
  ExitCheckPolicy policy;
  Mode mode = Mode::kFork;
};

class CycleLeakTest : public CycleTest, public testing::WithParamInterface<LeakCase> {};

TEST_P(CycleLeakTest, ExitCheckFindsThePlantedLeakExactlyWhenItRuns) {
  CycleOptions o = SmallOptions(GetParam().mode, GetParam().layout, 10);
  o.backend.exit_check = GetParam().policy;
  o.backend.leak_pins = 2;
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));

  bool check_runs = false;
  switch (GetParam().policy) {
    case ExitCheckPolicy::kAlways: check_runs = true; break;
    case ExitCheckPolicy::kOff: check_runs = false; break;
    case ExitCheckPolicy::kAssert:
      // Compiled only into builds with assert checking: each build tests its side.
      if constexpr (kAssertChecking) {
        check_runs = true;
      } else {
        check_runs = false;
      }
      break;
  }
  // A pre-forked backend's reset finds what the exit check did not look
  // for: the next connection must not inherit a pin.
  const bool caught = check_runs || GetParam().mode == Mode::kPrefork;
  for (const BackendRecord& r : result_records) {
    SCOPED_TRACE(testing::Message() << "connection " << r.sequence);
    EXPECT_EQ(r.outcome, BackendOutcome::kExited) << "a leak is reported, never a crash";
    EXPECT_TRUE(r.Done(Phase::kExitCheck));
    EXPECT_EQ(r.exit_check_ran, check_runs ? 1 : 0);
    if (caught) {
      EXPECT_EQ(r.leaks_found, 2);
      EXPECT_NE(r.leak_buffers[0], r.leak_buffers[1]);
      for (int i = 0; i < 2; ++i) {
        EXPECT_GE(r.leak_buffers[i], 0);
        EXPECT_LT(static_cast<uint32_t>(r.leak_buffers[i]), o.backend.shared_buffers.nbuffers);
        EXPECT_EQ(r.leak_counts[i], 1);
      }
    } else {
      EXPECT_EQ(r.leaks_found, 0);
    }
  }
  EXPECT_EQ(Summarize(*result).leaks, caught ? 2 * o.connections : 0);
  ExpectNothingLeft();
}

std::vector<LeakCase> AllLeakCases() {
  std::vector<LeakCase> cases;
  for (Mode mode : {Mode::kFork, Mode::kThread, Mode::kPrefork}) {
    for (Layout layout : kLayouts) {
      for (ExitCheckPolicy policy : buffers::kAllExitCheckPolicies) cases.push_back({layout, policy, mode});
    }
  }
  return cases;
}

std::string LeakCaseName(const testing::TestParamInfo<LeakCase>& info) {
  return std::string(ModeName(info.param.mode)) + "_" +
         LayoutParamName(testing::TestParamInfo<Layout>(info.param.layout, info.index)) + "_" +
         std::string(buffers::ExitCheckPolicyName(info.param.policy));
}

INSTANTIATE_TEST_SUITE_P(LayoutsAndPolicies, CycleLeakTest, testing::ValuesIn(AllLeakCases()), LeakCaseName);

// ---- phase accounting --------------------------------------------------------------

TEST_F(CycleTest, PhasesAndWaitAddUpToTheLifetime) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kArray, 30);
  o.backend.exit_check = ExitCheckPolicy::kAlways;
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));

  for (const BackendRecord& r : result_records) {
    SCOPED_TRACE(testing::Message() << "connection " << r.sequence);
    ASSERT_EQ(r.outcome, BackendOutcome::kExited);
    int64_t sum = 0;
    for (Phase p : kAllPhases) {
      const PhaseCounters& c = r.phase[static_cast<int>(p)];
      // Every phase did something between two clock reads: a phase dropped
      // from the accounting shows up here as zero.
      EXPECT_GT(c.wall_ns, 0) << PhaseName(p);
      EXPECT_GE(c.cpu_ns, 0) << PhaseName(p);
      EXPECT_GE(c.minor_faults, 0) << PhaseName(p);
      EXPECT_GE(c.major_faults, 0) << PhaseName(p);
      EXPECT_GE(c.syscalls, -1) << PhaseName(p);
      sum += c.wall_ns;
    }
    EXPECT_GE(r.WaitNs(), 0);
    // The phases and the wait are disjoint intervals of accept -> reaped on
    // one clock, so they can never add up to more than the lifetime.
    EXPECT_LE(sum + r.WaitNs(), r.LifetimeNs());
  }
  // What they leave out are the gaps between phases (the child's setup before
  // init_buffers, the clock reads): how large is a figure, not a behaviour,
  // so no proportion is asserted. A dropped phase is caught above
  // (wall_ns > 0), a double-counted one by the exact upper bound.
  ExpectNothingLeft();
}

// The exit check of the `array` layout scans NBuffers 4-byte counts that the
// backend has never written: every page of the table is faulted in fresh
// (the zero page), so its faults grow with shared_buffers. Work pins would
// fault pages in before the check, so there are none here.
TEST_F(CycleTest, ArrayExitCheckFaultsGrowWithSharedBuffers) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kArray, 15);
  o.backend.exit_check = ExitCheckPolicy::kAlways;
  o.backend.work_pins = 0;
  std::vector<BackendRecord> small_records;
  absl::StatusOr<CycleResult> small = RunCycle(WithRecords(o, small_records));
  ASSERT_TRUE(small.ok()) << small.status();
  o.backend.shared_buffers = Size("1GB");
  std::vector<BackendRecord> large_records;
  absl::StatusOr<CycleResult> large = RunCycle(WithRecords(o, large_records));
  ASSERT_TRUE(large.ok()) << large.status();

  const int64_t small_faults = MedianExitCheckFaults(small_records), large_faults = MedianExitCheckFaults(large_records);
  EXPECT_GT(large_faults, small_faults);
  // 131072 buffers x 4 bytes = 128 pages, nearly all first touched by the scan.
  EXPECT_GE(large_faults, 100);
  ExpectNothingLeft();
}

// The `hash` layout's exit check looks at its few entries, whatever NBuffers is.
TEST_F(CycleTest, HashExitCheckFaultsDoNotGrowWithSharedBuffers) {
  CycleOptions o = SmallOptions(Mode::kFork, Layout::kHash, 15);
  o.backend.exit_check = ExitCheckPolicy::kAlways;
  o.backend.shared_buffers = Size("1GB");
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LE(MedianExitCheckFaults(result_records), 8);
  ExpectNothingLeft();
}

// ---- inproc mode -----------------------------------------------------------------------

TEST_F(CycleTest, InprocRunsEveryBackendWithoutForkOrReap) {
  const CycleOptions o = SmallOptions(Mode::kInproc, Layout::kHash);
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->connections, o.connections);
  EXPECT_EQ(result->failed_connections, 0);
  EXPECT_TRUE(result->socket_dir.empty());
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
  for (const BackendRecord& r : result_records) {
    SCOPED_TRACE(testing::Message() << "backend " << r.sequence);
    EXPECT_EQ(r.outcome, BackendOutcome::kExited);
    EXPECT_GE(r.sequence, o.warmup);
    EXPECT_FALSE(r.Done(Phase::kFork));
    EXPECT_FALSE(r.Done(Phase::kReap));
    for (Phase p : {Phase::kInitBuffers, Phase::kInitCatcache, Phase::kWork, Phase::kExitCheck, Phase::kTeardown}) {
      EXPECT_TRUE(r.Done(p)) << PhaseName(p);
    }
    EXPECT_GE(r.WaitNs(), 0);
  }
  const CycleSummary s = Summarize(*result);
  EXPECT_EQ(s.phases[static_cast<int>(Phase::kFork)].wall_us.count, 0u);
  EXPECT_EQ(s.phases[static_cast<int>(Phase::kReap)].wall_us.count, 0u);
  ExpectNothingLeft();
}

TEST_F(CycleTest, InprocReportsAPlantedLeak) {
  CycleOptions o = SmallOptions(Mode::kInproc, Layout::kArray, 10);
  o.backend.exit_check = ExitCheckPolicy::kAlways;
  o.backend.leak_pins = 2;
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
  for (const BackendRecord& r : result_records) EXPECT_EQ(r.leaks_found, 2) << "backend " << r.sequence;
  ExpectNothingLeft();
}

// ---- thread mode -----------------------------------------------------------------------

class CycleThreadTest : public CycleTest, public testing::WithParamInterface<Layout> {};

TEST_P(CycleThreadTest, EveryConnectionRunsInAThreadOfOneServerProcess) {
  for (ThreadMemory memory : {ThreadMemory::kFresh, ThreadMemory::kReuse}) {
    SCOPED_TRACE(ThreadMemoryName(memory));
    CycleOptions o = SmallOptions(Mode::kThread, GetParam());
    o.thread_memory = memory;
    o.clients = 2;
    std::vector<BackendRecord> result_records;
    absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->connections, o.connections);
    EXPECT_EQ(result->failed_connections, 0);
    ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
    for (const BackendRecord& r : result_records) {
      SCOPED_TRACE(testing::Message() << "connection " << r.sequence);
      EXPECT_EQ(r.outcome, BackendOutcome::kExited);
      // Its thread's id: neither this process nor the server process.
      EXPECT_GT(r.pid, 0);
      EXPECT_NE(r.pid, getpid());
      EXPECT_NE(r.pid, result->postmaster_pid);
      for (Phase p : kAllPhases) EXPECT_TRUE(r.Done(p)) << PhaseName(p, BackendKind::kThread);
      EXPECT_LE(r.accept_ns, r.child_start_ns);
      EXPECT_LE(r.ready_ns, r.terminate_ns);
      EXPECT_LE(r.exit_ns, r.reaped_ns);
    }
    // The server's usage is the one process's: every connection counted.
    EXPECT_EQ(result->server.connections, o.warmup + o.connections);
    EXPECT_GT(result->server.cpu_ns, 0);
    EXPECT_GT(result->server.postmaster_cpu_ns, 0);
    EXPECT_LT(result->server.postmaster_cpu_ns, result->server.cpu_ns) << "the postmaster thread's own share";
    ExpectNothingLeft();
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, CycleThreadTest, testing::ValuesIn(kLayouts), LayoutParamName);

TEST(CycleThreadNamesTest, AThreadStartsAndEndsWithItsOwnWords) {
  EXPECT_EQ(PhaseName(Phase::kFork, BackendKind::kThread), "thread_start");
  EXPECT_EQ(PhaseName(Phase::kReap, BackendKind::kThread), "thread_join");
  EXPECT_EQ(PhaseName(Phase::kTeardown, BackendKind::kThread), "teardown");
  for (Phase p : kAllPhases) EXPECT_EQ(PhaseName(p, BackendKind::kProcess), PhaseName(p));
  EXPECT_EQ(BackendKindOf(Mode::kThread), BackendKind::kThread);
  EXPECT_EQ(BackendKindOf(Mode::kFork), BackendKind::kProcess);
  for (ThreadMemory m : {ThreadMemory::kFresh, ThreadMemory::kReuse}) EXPECT_EQ(*ParseThreadMemory(ThreadMemoryName(m)), m);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseThreadMemory("arena").status()));
}

// Exact faults of a fresh table in a thread: the array table at 1GB is
// 131072 4-byte counts, 128 pages that no pin touched, each read once by the
// exit scan, each mapped (the zero page) by one fault of the thread's own.
// From a reused arena the pages are there already: the first reuse writes
// the zero pages the scan mapped (memset: 128 faults in init_buffers), every
// later one faults nothing. Which connection reuses which arena depends on
// how backends overlap, so a scan faults the whole table or nothing, and
// with 15 connections and one client some connections fault neither. (The 4-kB page is
// this project's platform, x86-64 Linux.)
TEST_F(CycleTest, AFreshTableFaultsEachPageOnceInAThreadAndAReusedOneNone) {
  ASSERT_EQ(sysconf(_SC_PAGESIZE), 4096);
  // Under ASan an instrumented access reads its shadow byte first: up to
  // one more fault per 8 fresh pages (the shadow's page of them, one more
  // where it straddles a page boundary), fewer where an earlier mapping at
  // the same addresses left its shadow mapped.
#if defined(__SANITIZE_ADDRESS__)
  constexpr int64_t kShadow = 128 / 8 + 1;
#else
  constexpr int64_t kShadow = 0;
#endif
  // A thread whose stack glibc did not take from its cache (more threads
  // alive at once, as under load) may fault one stack page the first time
  // a phase reaches that deep: the scan's 128 and at most that one.
  constexpr int64_t kFreshStackPage = 1;
  auto table = [](int64_t faults) { return faults >= 128 && faults <= 128 + kShadow + kFreshStackPage; };
  for (ThreadMemory memory : {ThreadMemory::kFresh, ThreadMemory::kReuse}) {
    SCOPED_TRACE(ThreadMemoryName(memory));
    CycleOptions o = SmallOptions(Mode::kThread, Layout::kArray, 15);
    o.thread_memory = memory;
    o.backend.exit_check = ExitCheckPolicy::kAlways;
    o.backend.work_pins = 0;
    o.backend.shared_buffers = Size("1GB");
    std::vector<BackendRecord> result_records;
    absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
    int no_faults = 0;
    for (const BackendRecord& r : result_records) {
      SCOPED_TRACE(testing::Message() << "connection " << r.sequence);
      const int64_t init = r.phase[static_cast<int>(Phase::kInitBuffers)].minor_faults;
      const int64_t scan = r.phase[static_cast<int>(Phase::kExitCheck)].minor_faults;
      // init_buffers may fault a page or two besides the table (a new
      // thread's first malloc), never one of its 128.
      if (memory == ThreadMemory::kFresh) {
        EXPECT_LT(init, 8) << "a fresh mapping faults nothing until touched";
        EXPECT_TRUE(table(scan)) << scan << " faults";
      } else {
        EXPECT_TRUE(scan == 0 || table(scan)) << "exit_check " << scan << " faults";
        no_faults += init < 8 && scan == 0;
      }
    }
    if (memory == ThreadMemory::kReuse) {
      EXPECT_GT(no_faults, 0);
    }
    ExpectNothingLeft();
  }
}

// Counts survive a million operations in a backend thread as in a process:
// four backends of 250000 pin+unpin pairs each, one planted pin, and the
// exit check finds exactly that pin in each.
TEST_F(CycleTest, CountsSurviveAMillionPinsInEveryServerMode) {
  for (Mode mode : {Mode::kFork, Mode::kThread, Mode::kPrefork}) {
    for (Layout layout : kLayouts) {
      SCOPED_TRACE(testing::Message() << ModeName(mode) << " " << buffers::LayoutName(layout));
      CycleOptions o = SmallOptions(mode, layout, 4);
      o.warmup = 0;
      o.backend.work_pins = 250'000;
      o.backend.leak_pins = 1;
      o.backend.exit_check = ExitCheckPolicy::kAlways;
      std::vector<BackendRecord> result_records;
      absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_EQ(result_records.size(), 4u);
      for (const BackendRecord& r : result_records) {
        EXPECT_EQ(r.leaks_found, 1) << "connection " << r.sequence;
        EXPECT_EQ(r.leak_counts[0], 1) << "connection " << r.sequence;
      }
      ExpectNothingLeft();
    }
  }
}

// A backend thread that dies takes the server with it: the run ends with
// one line saying so, and nothing is left behind.
TEST_F(CycleTest, AThreadThatCrashesTakesTheServerDownAndTheRunSaysSo) {
  CycleOptions o = SmallOptions(Mode::kThread, Layout::kHash);
  o.backend.kill_backend = 7;
  absl::StatusOr<CycleResult> result = RunCycle(o);
  ASSERT_FALSE(result.ok());
  EXPECT_FALSE(absl::IsInvalidArgument(result.status())) << result.status();
  const std::string message(result.status().message());
  EXPECT_NE(message.find("the server process died (signal 9)"), std::string::npos) << message;
  EXPECT_NE(message.find("takes the server"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
  ExpectNothingLeft();
}

// ---- prefork mode ----------------------------------------------------------------------

class CyclePreforkTest : public CycleTest, public testing::WithParamInterface<Layout> {};

// Every connection is served by one of the pool's backends, each of which
// serves one after another: as many pids as the pool, no more.
TEST_P(CyclePreforkTest, ThePoolServesEveryConnectionAndNoBackendExitsBetween) {
  CycleOptions o = SmallOptions(Mode::kPrefork, GetParam());
  o.clients = 2;
  o.pool = 3;
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->connections, o.connections);
  EXPECT_EQ(result->failed_connections, 0);
  EXPECT_EQ(result->replaced, 0);
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
  std::set<int32_t> pids;
  for (const BackendRecord& r : result_records) {
    SCOPED_TRACE(testing::Message() << "connection " << r.sequence);
    EXPECT_EQ(r.outcome, BackendOutcome::kExited);
    pids.insert(r.pid);
    for (Phase p : kAllPhases) EXPECT_TRUE(r.Done(p)) << PhaseName(p, BackendKind::kPooled);
    EXPECT_LE(r.accept_ns, r.child_start_ns);
    EXPECT_LE(r.exit_ns, r.reaped_ns);
  }
  EXPECT_LE(pids.size(), 3u);
  EXPECT_EQ(result->server.connections, o.warmup + o.connections);
  EXPECT_GT(result->server.cpu_ns, 0);
  ExpectNothingLeft();
}

INSTANTIATE_TEST_SUITE_P(Layouts, CyclePreforkTest, testing::ValuesIn(kLayouts), LayoutParamName);

TEST(CyclePreforkNamesTest, APooledBackendIsHandedOffResetAndReleased) {
  EXPECT_EQ(PhaseName(Phase::kFork, BackendKind::kPooled), "handoff");
  EXPECT_EQ(PhaseName(Phase::kTeardown, BackendKind::kPooled), "reset");
  EXPECT_EQ(PhaseName(Phase::kReap, BackendKind::kPooled), "release");
  EXPECT_EQ(PhaseName(Phase::kWork, BackendKind::kPooled), "work");
  EXPECT_EQ(BackendKindOf(Mode::kPrefork), BackendKind::kPooled);
  CycleOptions o;
  o.clients = 4;
  EXPECT_EQ(PoolSize(o), 5);
  o.pool = 2;
  EXPECT_EQ(PoolSize(o), 2);
}

// A reset backend starts its next connection with empty tables: pins a
// connection leaked (with no exit check to find them) and the catalog
// entries it loaded are gone after its reset, in every layout.
TEST(PooledBackendTest, AResetLeavesNoPinAndNoCacheEntry) {
  for (Layout layout : kLayouts) {
    SCOPED_TRACE(buffers::LayoutName(layout));
    BackendConfig config;
    config.layout = layout;
    config.shared_buffers = Size("128MB");
    config.exit_check = ExitCheckPolicy::kOff;
    config.work_lookups = 50;
    config.leak_pins = 3;
    absl::StatusOr<SharedPool> pool = SharedPool::Create(config.shared_buffers);
    ASSERT_TRUE(pool.ok()) << pool.status();
    absl::StatusOr<BackendEnvironment> env = PrepareBackendEnvironment(config, &*pool);
    ASSERT_TRUE(env.ok()) << env.status();
    env->kind = BackendKind::kPooled;
    absl::StatusOr<std::unique_ptr<PooledBackend>> backend = PooledBackend::Build(*env);
    ASSERT_TRUE(backend.ok()) << backend.status();
    EXPECT_EQ((*backend)->HeldPins(), 0u);
    EXPECT_EQ((*backend)->CacheEntries(), 0u);
    for (int64_t connection = 0; connection < 3; ++connection) {
      BackendRecord record;
      record.sequence = connection;
      ASSERT_TRUE((*backend)->Serve(-1, SampleThread(), record).ok());
      EXPECT_EQ(record.exit_check_ran, 0);
      EXPECT_EQ(record.leaks_found, 3) << "the reset found the pins the exit check never looked for";
      EXPECT_EQ((*backend)->HeldPins(), 0u) << "connection " << connection;
      EXPECT_EQ((*backend)->CacheEntries(), 0u) << "connection " << connection;
      EXPECT_TRUE(record.Done(Phase::kTeardown));
    }
    // The shared pin counts went back too.
    for (uint32_t b = 0; b < config.shared_buffers.nbuffers; ++b) {
      ASSERT_EQ(pool->SharedRefCount(b).load(), 0u) << "buffer " << b;
    }
  }
}

// A pre-forked backend killed mid-connection: its connection fails, its
// record says it crashed, the pool gets a new backend, and the run goes on.
TEST_F(CycleTest, AKilledPreforkedBackendIsReplacedAndTheRunGoesOn) {
  CycleOptions o = SmallOptions(Mode::kPrefork, Layout::kHash);
  o.backend.kill_backend = 7;
  std::vector<BackendRecord> result_records;
  absl::StatusOr<CycleResult> result = RunCycle(WithRecords(o, result_records));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->replaced, 1);
  EXPECT_EQ(result->connections, o.connections - 1);
  EXPECT_EQ(result->failed_connections, 1);
  ASSERT_EQ(result_records.size(), static_cast<size_t>(o.connections));
  int crashed = 0;
  for (const BackendRecord& r : result_records) {
    if (r.sequence != 7) {
      EXPECT_EQ(r.outcome, BackendOutcome::kExited) << "connection " << r.sequence;
      continue;
    }
    ++crashed;
    EXPECT_EQ(r.outcome, BackendOutcome::kCrashed);
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_FALSE(r.Done(Phase::kWork));
  }
  EXPECT_EQ(crashed, 1);
  ExpectNothingLeft();
}

}  // namespace
}  // namespace backendlab::lifecycle
