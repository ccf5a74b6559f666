// The SIGPROF sampler: attribution to a known hot function, forked children,
// PIE and non-PIE symbolization, bad input, and a clean stop.
#include "profiling/sampler.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "profiling/folded_stacks.h"
#include "profiling/symbolizer.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"

namespace backendlab::profiling {
namespace {

using test_util::RunProgram;

int64_t CpuNowNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void BurnCpu(int64_t ns) {
  volatile uint64_t sum = 0;
  const int64_t end = CpuNowNs() + ns;
  while (CpuNowNs() < end) {
    for (int i = 0; i < 10'000; ++i) sum = sum + static_cast<uint64_t>(i);
  }
}

// A test's buffer: its own mapping, as in the lifecycle, or the test fails.
class MappedBuffer {
 public:
  explicit MappedBuffer(uint32_t capacity) : mapped_(MappedSampleBuffer::Create(capacity)) {
    EXPECT_TRUE(mapped_.ok()) << mapped_.status();
  }
  SampleBuffer* get() { return mapped_.ok() ? mapped_->get() : nullptr; }

 private:
  absl::StatusOr<MappedSampleBuffer> mapped_;
};

// Lines of /proc/self/timers that are SIGPROF timers (-1 if the kernel has
// no such file).
int ProfTimers() {
  std::ifstream in("/proc/self/timers");
  if (!in) return -1;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("signal: " + std::to_string(SIGPROF) + "/")) ++n;
  }
  return n;
}

// Stops the sampler when a test ends, also after a failed ASSERT: a timer
// left behind would write into a buffer that is gone.
struct StopAtEnd {
  ~StopAtEnd() { Sampler::Stop(); }
};

TEST(SamplerTest, RejectsBadInput) {
  MappedBuffer buffer(16);
  for (int hz : {0, -5, 100'001}) {
    SamplerOptions options;
    options.frequency_hz = hz;
    const absl::Status s = Sampler::Start(options, buffer.get());
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << hz << ": " << s;
    EXPECT_NE(s.message().find("1..100000"), absl::string_view::npos) << s;
    EXPECT_FALSE(Sampler::Running());
  }
  EXPECT_TRUE(absl::IsFailedPrecondition(Sampler::RestartAfterFork(buffer.get())));
  ASSERT_TRUE(Sampler::Start({}, buffer.get()).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(Sampler::Start({}, buffer.get())));
  Sampler::Stop();
  Sampler::Stop();  // a second stop is harmless
  EXPECT_FALSE(Sampler::Running());
  EXPECT_TRUE(absl::StatusOr<SampleClock>(ParseSampleClock("cpu")).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ParseSampleClock("tsc").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseUnwinder("dwarf").status()));
}

TEST(SamplerTest, StopLeavesNoTimerOrHandler) {
  struct sigaction before {};
  sigaction(SIGPROF, nullptr, &before);
  MappedBuffer buffer(1024);
  SamplerOptions options;
  options.clock = SampleClock::kWall;
  options.frequency_hz = 5000;
  ASSERT_TRUE(Sampler::Start(options, buffer.get()).ok());
  if (ProfTimers() >= 0) {
    EXPECT_EQ(ProfTimers(), 1);
  }
  BurnCpu(20'000'000);
  Sampler::Stop();
  EXPECT_GT(buffer.get()->size(), 0u) << "5 kHz for 20 ms took no sample";
  if (ProfTimers() >= 0) {
    EXPECT_EQ(ProfTimers(), 0);
  }
  struct sigaction after {};
  sigaction(SIGPROF, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler) << "the SIGPROF disposition was not restored";

  // Nothing raises SIGPROF any more: a handler of our own sees no signal.
  static volatile sig_atomic_t seen = 0;
  struct sigaction counting {};
  counting.sa_handler = [](int) { seen = seen + 1; };
  sigemptyset(&counting.sa_mask);
  sigaction(SIGPROF, &counting, nullptr);
  BurnCpu(30'000'000);
  sigaction(SIGPROF, &before, nullptr);
  EXPECT_EQ(seen, 0);
}

TEST(SamplerTest, FullBufferCountsDroppedSamples) {
  MappedBuffer buffer(2);
  SamplerOptions options;
  options.clock = SampleClock::kWall;
  options.frequency_hz = 10'000;
  ASSERT_TRUE(Sampler::Start(options, buffer.get()).ok());
  BurnCpu(30'000'000);
  Sampler::Stop();
  EXPECT_EQ(buffer.get()->size(), 2u);
  EXPECT_GT(buffer.get()->dropped.load(), 0u);
  EXPECT_EQ(CopySamples(*buffer.get()).size(), 2u);
}

TEST(SamplerTest, TagsAndPidAreRecorded) {
  MappedBuffer buffer(4096);
  SamplerOptions options;
  options.clock = SampleClock::kWall;
  options.frequency_hz = 5000;
  SetSampleTag(7);
  ASSERT_TRUE(Sampler::Start(options, buffer.get()).ok());
  BurnCpu(20'000'000);
  SetSampleTag(9);
  BurnCpu(20'000'000);
  Sampler::Stop();
  std::map<int32_t, int> tags;
  for (const RawSample& s : CopySamples(*buffer.get())) {
    EXPECT_EQ(s.pid, getpid());
    EXPECT_GE(s.depth, 1);
    ++tags[s.tag];
  }
  EXPECT_GT(tags[7], 0);
  EXPECT_GT(tags[9], 0);
  EXPECT_EQ(tags.size(), 2u);
}

// Many signals while the process allocates and forks children that sample
// themselves: no deadlock (the test would time out), no sanitizer report
// (the asan preset runs this), and every child's samples come back.
TEST(SamplerTest, HighFrequencyWithMallocAndForks) {
  MappedBuffer parent(1 << 14);
  std::vector<std::unique_ptr<MappedBuffer>> children;
  SamplerOptions options;
  options.clock = SampleClock::kWall;
  options.frequency_hz = 20'000;
  StopAtEnd stop;
  ASSERT_TRUE(Sampler::Start(options, parent.get()).ok());
  for (int round = 0; round < 20; ++round) {
    children.push_back(std::make_unique<MappedBuffer>(1024));
    const pid_t pid = fork();
    if (pid == 0) {
      if (!Sampler::RestartAfterFork(children.back()->get()).ok()) _exit(1);
      std::vector<std::vector<char>> blocks;
      const int64_t end = CpuNowNs() + 5'000'000;
      while (CpuNowNs() < end) {
        blocks.emplace_back(4096 + blocks.size() % 7 * 1000, 'x');
        if (blocks.size() > 64) blocks.clear();
      }
      _exit(0);
    }
    ASSERT_GT(pid, 0);
    std::vector<std::string> strings;
    for (int i = 0; i < 2000; ++i) strings.push_back(std::string(100 + i % 50, 'y'));
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  Sampler::Stop();
  EXPECT_GT(parent.get()->size(), 0u);
  int children_sampled = 0;
  for (auto& child : children) children_sampled += child->get()->size() > 0;
  EXPECT_GE(children_sampled, 15) << "5 ms at 20 kHz should sample nearly every child";
}

TEST(SymbolizerTest, ShortFunctionNames) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"foo::(anonymous namespace)::Bar<>()", "foo::(anonymous namespace)::Bar"},
      {"ns::F<int, std::vector<int> >(int) const", "ns::F"},
      {"std::vector<int, std::allocator<int> >::push_back(int const&)", "std::vector::push_back"},
      {"main", "main"},
      {"[unknown]", "[unknown]"},
      {"[libc.so.6]", "[libc.so.6]"},
      {"operator new(unsigned long)", "operator new"},
      {"(anonymous namespace)::Loop()", "(anonymous namespace)::Loop"},
      {"operator<<(std::ostream&, int)", "operator<<"},
      {"std::ostream::operator<<=(int)", "std::ostream::operator<<="},
      {"std::operator< <int>(std::vector<int> const&, std::vector<int> const&)", "std::operator<"},
      {"Foo::operator()(int) const", "Foo::operator()"},
      {"Foo::operator[](unsigned long)", "Foo::operator[]"},
      {"F()::{lambda(int)#1}::operator()(int) const", "F::{lambda}::operator()"},
      {"my_operator<int>(int)", "my_operator"},
      {"pthread_sigmask@GLIBC_2.2.5", "pthread_sigmask"},
      {"operator delete(void*, unsigned long)", "operator delete"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(ShortFunctionName(in), want) << in;
}

__attribute__((noinline)) int KnownFunction(int x) { return x * 3 + 1; }

TEST(SymbolizerTest, NamesFunctionsOfThisProgramAndUnknownAddresses) {
  Symbolizer symbolizer;
  const auto pc = reinterpret_cast<uintptr_t>(&KnownFunction);
  EXPECT_EQ(symbolizer.Name(pc, false), "backendlab::profiling::(anonymous namespace)::KnownFunction");
  // A return address is looked up one byte back: the byte after a function's
  // first is still the function.
  EXPECT_EQ(symbolizer.Name(pc + 1, true), symbolizer.Name(pc, false));
  EXPECT_EQ(symbolizer.Name(16, false), "[unknown]");
  EXPECT_EQ(symbolizer.Name(reinterpret_cast<uintptr_t>(&getpid), false), "getpid");
}

TEST(SymbolizerTest, FoldsRootFirstWithPrefix) {
  RawSample s;
  s.tag = 3;
  s.depth = 2;
  s.pcs[0] = reinterpret_cast<uintptr_t>(&KnownFunction);  // leaf
  s.pcs[1] = 16;                                            // caller, unknown
  Symbolizer symbolizer;
  const std::vector<RawSample> samples = {s, s};
  const FoldedStacks folded = FoldSamples(
      samples, symbolizer,
      {.keep = nullptr, .prefix = [](const RawSample& r) { return std::vector<std::string>{"p", std::to_string(r.tag)}; }});
  EXPECT_EQ(folded.ToText(), "p;3;[unknown];backendlab::profiling::(anonymous namespace)::KnownFunction 2\n");
  const FoldedStacks none = FoldSamples(samples, symbolizer, {.keep = [](const RawSample&) { return false; }, .prefix = nullptr});
  EXPECT_EQ(none.total_samples(), 0);
}

// ---- the probe: a whole program with a known profile -------------------------

struct ProbeRun {
  bool frame_pointers = false;
  FoldedStacks parent, child;  // per process, with their tag frame first
};

bool IsPie(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char header[18] = {};
  f.read(header, sizeof header);
  return header[16] == 3;  // e_type ET_DYN; ET_EXEC (2) is a fixed-address executable
}

int64_t Matching(const FoldedStacks& stacks, const std::string& frame) {
  int64_t n = 0;
  for (const auto& [stack, count] : stacks.stacks()) {
    for (std::string_view f : SplitFrames(stack)) {
      if (f.find(frame) != std::string_view::npos) {
        n += count;
        break;
      }
    }
  }
  return n;
}

int64_t LeafIs(const FoldedStacks& stacks, const std::string& function) {
  int64_t n = 0;
  for (const auto& [stack, count] : stacks.stacks()) {
    if (SplitFrames(stack).back().find(function) != std::string_view::npos) n += count;
  }
  return n;
}

class ProbeTest : public test_util::TempDirTest,
                  public ::testing::WithParamInterface<std::tuple<bool, std::string, std::string>> {
 protected:
  ProbeRun Run() {
    const auto& [pie, unwinder, clock] = GetParam();
    const std::string path = pie ? SAMPLER_PROBE_PATH : SAMPLER_PROBE_NOPIE_PATH;
    EXPECT_EQ(IsPie(path), pie) << path;
    test_util::RunResult r = RunProgram({path, "--unwinder=" + unwinder, "--clock=" + clock}, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ProbeRun run;
    const std::vector<std::string> lines = test_util::Lines(r.out);
    EXPECT_FALSE(lines.empty());
    if (lines.empty()) return run;
    run.frame_pointers = lines[0] == "frame_pointers=1";
    absl::StatusOr<FoldedStacks> all = FoldedStacks::Parse(r.out.substr(r.out.find('\n') + 1));
    EXPECT_TRUE(all.ok()) << all.status();
    if (!all.ok()) return run;
    run.parent = all->Under("parent");
    run.child = all->Under("child");
    return run;
  }
};

TEST_P(ProbeTest, AttributesTheHotFunctionFollowsTheChildAndReachesMain) {
  const auto& [pie, unwinder, clock] = GetParam();
  const ProbeRun run = Run();
  // With the wall clock the parent is also sampled while it waits for the
  // child: those samples are right, but not part of the 80/20 split.
  const double parent = static_cast<double>(run.parent.total_samples() - Matching(run.parent, "wait"));
  const double child = static_cast<double>(run.child.total_samples());
  // 0.5 s of parent CPU: even at a 100 Hz tick (which limits CPU timers)
  // that is 50 samples; the minimums only make the ratios below meaningful.
  if (clock == "wall") {
    EXPECT_GT(Matching(run.parent, "wait"), 0) << "the wall clock samples blocked time too";
  }
  ASSERT_GE(parent, 20) << run.parent.ToText();
  ASSERT_GE(child, 8) << run.child.ToText();

  // The leaf is the interrupted instruction, exact with any unwinder: Spin,
  // or the clock it reads (whose vDSO frames may hide Spin from fp in a build
  // without frame pointers).
  EXPECT_GE((LeafIs(run.parent, "Spin") + LeafIs(run.parent, "clock_gettime")) / parent, 0.85) << run.parent.ToText();
  const bool full_stacks = unwinder == "libunwind" || run.frame_pointers;
  if (full_stacks) {
    const double hot = static_cast<double>(Matching(run.parent, "HotLoop")) / parent;
    const double cold = static_cast<double>(Matching(run.parent, "ColdLoop")) / parent;
    EXPECT_GE(hot, 0.6) << "HotLoop runs 80 % of the parent's CPU\n" << run.parent.ToText();
    EXPECT_LE(cold, 0.35) << run.parent.ToText();
    EXPECT_GE(static_cast<double>(Matching(run.parent, "main")) / parent, 0.9)
        << "stacks must reach the program's entry point\n" << run.parent.ToText();
    EXPECT_GE(static_cast<double>(Matching(run.child, "OnlyInChild")) / child, 0.9) << run.child.ToText();
  }
  // The child's function never shows in the parent, and the child's samples
  // carry the tag the child set (tag 1, inherited, only before it set 2).
  EXPECT_EQ(Matching(run.parent, "OnlyInChild"), 0) << run.parent.ToText();
  EXPECT_EQ(run.parent.Under("[tag1]").total_samples(), run.parent.total_samples());
  EXPECT_GE(static_cast<double>(run.child.Under("[tag2]").total_samples()) / child, 0.95) << run.child.ToText();
}

std::string ProbeName(const ::testing::TestParamInfo<ProbeTest::ParamType>& param) {
  return std::string(std::get<0>(param.param) ? "pie_" : "nopie_") + std::get<1>(param.param) + "_" +
         std::get<2>(param.param);
}

INSTANTIATE_TEST_SUITE_P(
    PieUnwinderClock, ProbeTest,
    ::testing::Combine(::testing::Bool(), ::testing::Values("libunwind", "fp"), ::testing::Values("cpu", "wall")),
    ProbeName);

}  // namespace
}  // namespace backendlab::profiling
