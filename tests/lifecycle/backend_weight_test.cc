// The backend weight profile: its file format (strict, round-tripping), and
// what it makes a backend do — counted where the kernel counts it.
#include "lifecycle/backend_weight.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lifecycle/cycle.h"
#include "profiling/perf_events.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/temp_dir.h"
#include "tests/test_util/skip.h"

namespace backendlab::lifecycle {
namespace {

using test_util::ChildrenOf;

constexpr char kFull[] = R"({"format": "backendlab backend profile 1",
 "postmaster": {"touch_pages": 100, "libraries": ["libcrypto.so.3"], "random_bytes_per_fork": 8},
 "startup": {"touch_pages": 300, "read_file_bytes": 160000, "syscalls": {"openat": 12, "read": 30, "close": 12}, "cpu_us": 2500.5},
 "work": {"cpu_us": 100},
 "exit": {"cpu_us": 800},
 "exit_path": "exit",
 "fitted": {"server": "15/128MB"}})";

TEST(BackendWeightTest, ParsesEveryKnob) {
  absl::StatusOr<BackendWeight> w = ParseBackendWeight(kFull);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->postmaster_touch_pages, 100);
  EXPECT_EQ(w->libraries, (std::vector<std::string>{"libcrypto.so.3"}));
  EXPECT_EQ(w->random_bytes_per_fork, 8);
  EXPECT_EQ(w->startup.touch_pages, 300);
  EXPECT_EQ(w->startup.read_file_bytes, 160000);
  EXPECT_EQ(w->startup.syscalls.at("openat"), 12);
  EXPECT_EQ(w->startup.syscalls.at("read"), 30);
  EXPECT_DOUBLE_EQ(w->startup.cpu_us, 2500.5);
  EXPECT_DOUBLE_EQ(w->work.cpu_us, 100);
  EXPECT_DOUBLE_EQ(w->exit.cpu_us, 800);
  EXPECT_EQ(w->exit_path, ExitPath::kExit);
  EXPECT_EQ(w->fitted["server"], "15/128MB");
  EXPECT_FALSE(w->empty());
  // Written and read back, it is the same profile.
  const std::string written = BackendWeightToJson(*w).dump(2);
  absl::StatusOr<BackendWeight> again = ParseBackendWeight(written);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << written;
  EXPECT_EQ(BackendWeightToJson(*again).dump(2), written);
  // The smallest profile is the empty one.
  absl::StatusOr<BackendWeight> empty = ParseBackendWeight(R"({"format": "backendlab backend profile 1"})");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
}

TEST(BackendWeightTest, BadFilesNameTheKey) {
  const std::pair<const char*, const char*> kBad[] = {
      {"{", "not valid JSON"},
      {"[]", "must be an object"},
      {R"({"startup": {}})", "format"},
      {R"({"format": "backendlab backend profile 2"})", "format"},
      {R"({"format": "backendlab backend profile 1", "startp": {}})", "startp: unknown key"},
      {R"({"format": "backendlab backend profile 1", "startup": {"touch_page": 1}})", "startup.touch_page: unknown key"},
      {R"({"format": "backendlab backend profile 1", "startup": {"touch_pages": -3}})", "startup.touch_pages: -3 is negative"},
      {R"({"format": "backendlab backend profile 1", "startup": {"touch_pages": 1.5}})", "startup.touch_pages"},
      {R"({"format": "backendlab backend profile 1", "startup": {"touch_pages": "many"}})", "startup.touch_pages"},
      {R"({"format": "backendlab backend profile 1", "work": {"touch_pages": 99999999999}})", "work.touch_pages"},
      {R"({"format": "backendlab backend profile 1", "exit": {"cpu_us": -1}})", "exit.cpu_us"},
      {R"({"format": "backendlab backend profile 1", "exit": {"cpu_us": 1e12}})", "exit.cpu_us"},
      {R"({"format": "backendlab backend profile 1", "startup": {"syscalls": {"fork": 1}}})", "startup.syscalls.fork"},
      {R"({"format": "backendlab backend profile 1", "startup": {"syscalls": {"read": -1}}})", "startup.syscalls.read"},
      {R"({"format": "backendlab backend profile 1", "startup": {"syscalls": [1]}})", "startup.syscalls"},
      {R"({"format": "backendlab backend profile 1", "exit_path": "quick_exit"})", "exit_path"},
      {R"({"format": "backendlab backend profile 1", "postmaster": {"libraries": "libssl.so.3"}})", "postmaster.libraries"},
      {R"({"format": "backendlab backend profile 1", "postmaster": {"random_bytes_per_fork": 8}})", "needs libcrypto"},
  };
  for (const auto& [text, key] : kBad) {
    absl::StatusOr<BackendWeight> w = ParseBackendWeight(text);
    ASSERT_FALSE(w.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(w.status())) << text;
    const std::string message(w.status().message());
    EXPECT_NE(message.find(key), std::string::npos) << text << " -> " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(LoadBackendWeight("/nonexistent/profile.json").status()));
}

class WeightedCycleTest : public test_util::PrivateTmpdirTest {
 protected:
  CycleOptions Options(BackendWeight weight) {
    CycleOptions o;
    o.backend.shared_buffers = *buffers::ParseSharedBuffers("128MB");
    o.backend.work_lookups = 10;
    o.backend.weight = std::move(weight);
    o.connections = 6;
    o.warmup = 2;
    o.baseline_forks = 2;
    return o;
  }
  void ExpectNothingLeft() {
    EXPECT_TRUE(ChildrenOf(getpid()).empty());
    EXPECT_TRUE(TmpdirIsEmpty()) << "the weight's directory was left in " << tmpdir_;
  }
};

// Under ASan every instrumented store reads its shadow byte first: 200
// fresh pages take one more fault per 8 (the shadow's page of them).
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kShadowFaults = 200 / 8;
#else
constexpr int64_t kShadowFaults = 0;
#endif

// Pages touched are first-touch faults in the phase that touches them;
// system calls of the kinds asked for are made, exactly, where they can be
// counted; a backend reads the file as it is asked to.
TEST_F(WeightedCycleTest, EachPhaseDoesItsPhysicalWork) {
  BackendWeight w;
  w.startup.touch_pages = 200;
  w.startup.syscalls = {{"getpid", 7}, {"brk", 3}};
  w.work.syscalls = {{"openat", 4}, {"close", 4}};
  w.exit.touch_pages = 50;
  CycleOptions o = Options(w);
  o.backend.count_syscalls = true;
  std::vector<BackendRecord> records;
  o.on_record = [&](const BackendRecord& r) { records.push_back(r); };
  absl::StatusOr<CycleResult> result = RunCycle(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(records.size(), 6u);
  for (const BackendRecord& r : records) {
    EXPECT_EQ(r.outcome, BackendOutcome::kExited);
    const PhaseCounters& startup = r.phase[static_cast<int>(Phase::kInitOther)];
    EXPECT_TRUE(r.Done(Phase::kInitOther));
    EXPECT_GE(startup.minor_faults, 200);
    EXPECT_LT(startup.minor_faults, 200 + kShadowFaults + 20) << "more faults than pages touched";
    EXPECT_GE(r.phase[static_cast<int>(Phase::kTeardown)].minor_faults, 50);
    if (result->syscalls_counted) {
      // 7 getpid, 3 brk, and the mmap of the 200 pages.
      EXPECT_EQ(startup.syscalls, 11);
    }
  }
  ExpectNothingLeft();
  if (!result->syscalls_counted) {
    BACKENDLAB_SKIP(test_util::SyscallCountsNeed())
        << "the pages were checked, the system calls not: the kernel cannot count them here";
  }
}

// An exit handler registered in the test process is inherited by the
// postmaster and every backend it forks: with an `exit` exit path it runs
// once in each backend (at the end of teardown), with `_exit` in none.
std::atomic<int>* g_exit_handler_runs = nullptr;
pid_t g_test_pid = 0;
void CountExitHandlerRun() {
  if (getpid() != g_test_pid && g_exit_handler_runs != nullptr) g_exit_handler_runs->fetch_add(1);
}

// libc's exit path, with a library loaded and its state used before each
// fork: every backend runs the exit handlers exactly once, and ends cleanly.
TEST_F(WeightedCycleTest, ExitPathRunsTheExitHandlersOnceInEveryBackend) {
  void* shared = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  g_exit_handler_runs = new (shared) std::atomic<int>(0);
  g_test_pid = getpid();
  static const bool registered = atexit(&CountExitHandlerRun) == 0;
  ASSERT_TRUE(registered);
  for (const char* path : {"exit", "_exit"}) {
    g_exit_handler_runs->store(0);
    absl::StatusOr<BackendWeight> w = ParseBackendWeight(absl::StrCat(R"({"format": "backendlab backend profile 1",
      "postmaster": {"libraries": ["libcrypto.so.3"], "random_bytes_per_fork": 8},
      "startup": {"read_file_bytes": 100000}, "exit_path": ")", path, R"("})"));
    ASSERT_TRUE(w.ok()) << w.status();
    std::vector<BackendRecord> records;
    CycleOptions o = Options(*w);
    o.on_record = [&](const BackendRecord& r) { records.push_back(r); };
    absl::StatusOr<CycleResult> result = RunCycle(o);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->connections, 6);
    for (const BackendRecord& r : records) {
      EXPECT_EQ(r.outcome, BackendOutcome::kExited) << "status " << r.exit_status << " signal " << r.signal;
    }
    const int backends = static_cast<int>(o.connections + o.warmup);  // the warm-up's too
    EXPECT_EQ(g_exit_handler_runs->load(), std::string_view(path) == "exit" ? backends : 0) << path;
    ExpectNothingLeft();
  }
  g_exit_handler_runs = nullptr;
  munmap(shared, sizeof(std::atomic<int>));
}

TEST_F(WeightedCycleTest, BadWeightsAreRefusedBeforeAnythingRuns) {
  BackendWeight w;
  w.libraries = {"libbackendlab-no-such-library.so.9"};
  absl::StatusOr<CycleResult> result = RunCycle(Options(w));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_NE(result.status().message().find("libbackendlab-no-such-library.so.9"), std::string_view::npos);
  CycleOptions inproc = Options(BackendWeight{});
  inproc.mode = Mode::kInproc;
  EXPECT_TRUE(absl::IsInvalidArgument(RunCycle(inproc).status()));
  ExpectNothingLeft();
}

}  // namespace
}  // namespace backendlab::lifecycle
