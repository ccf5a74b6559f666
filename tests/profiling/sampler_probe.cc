// A program with a known profile, for the sampler tests: ~80 % of its CPU in
// HotLoop, ~20 % in ColdLoop, and a forked child that alone runs
// OnlyInChild. It samples itself and its child and prints the folded stacks
// with the process ("parent", "child") and tag as the first two frames.
// Built twice, as a PIE and without PIE, so symbolization is tested on both.
//
// usage: sampler_probe [--unwinder=libunwind|fp] [--clock=cpu|wall]
// First output line: "frame_pointers=0|1".
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/compiler.h"
#include "profiling/sampler.h"
#include "profiling/symbolizer.h"

namespace {

using backendlab::profiling::RawSample;
using backendlab::profiling::SampleBuffer;

int64_t CpuNowNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Spins for `cpu_ns` of CPU time. The clock (a system call for a CPU clock)
// is read every million additions, so its share of the time is small.
__attribute__((noinline)) uint64_t Spin(int64_t cpu_ns) {
  volatile uint64_t sum = 0;
  const int64_t end = CpuNowNs() + cpu_ns;
  while (CpuNowNs() < end) {
    for (int i = 0; i < 1'000'000; ++i) sum = sum + static_cast<uint64_t>(i);
  }
  return sum;
}

// Each a function of its own on every stack that reaches it (noinline, and a
// call after Spin so it is not a tail call).
__attribute__((noinline)) uint64_t HotLoop(int64_t cpu_ns) {
  const uint64_t r = Spin(cpu_ns);
  backendlab::CompilerBarrier();
  return r + 1;
}
__attribute__((noinline)) uint64_t ColdLoop(int64_t cpu_ns) {
  const uint64_t r = Spin(cpu_ns);
  backendlab::CompilerBarrier();
  return r + 2;
}
__attribute__((noinline)) uint64_t OnlyInChild(int64_t cpu_ns) {
  const uint64_t r = Spin(cpu_ns);
  backendlab::CompilerBarrier();
  return r + 3;
}

// Shared with the child, so the parent reads what the child sampled.
backendlab::profiling::MappedSampleBuffer SharedBuffer(uint32_t capacity) {
  absl::StatusOr<backendlab::profiling::MappedSampleBuffer> buffer =
      backendlab::profiling::MappedSampleBuffer::Create(capacity);
  if (!buffer.ok()) {
    std::fprintf(stderr, "sampler_probe: %s\n", std::string(buffer.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(buffer);
}

}  // namespace

int main(int argc, char** argv) {
  backendlab::profiling::SamplerOptions options;
  options.frequency_hz = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--unwinder=")) {
      options.unwinder = *backendlab::profiling::ParseUnwinder(arg.substr(11));
    } else if (arg.starts_with("--clock=")) {
      options.clock = *backendlab::profiling::ParseSampleClock(arg.substr(8));
    } else {
      std::fprintf(stderr, "sampler_probe: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  std::printf("frame_pointers=%d\n", backendlab::kFramePointers ? 1 : 0);
  const backendlab::profiling::MappedSampleBuffer parent_mapping = SharedBuffer(4096);
  const backendlab::profiling::MappedSampleBuffer child_mapping = SharedBuffer(4096);
  SampleBuffer* parent = parent_mapping.get();
  SampleBuffer* child = child_mapping.get();
  backendlab::profiling::SetSampleTag(1);
  if (absl::Status s = backendlab::profiling::Sampler::Start(options, parent); !s.ok()) {
    std::fprintf(stderr, "sampler_probe: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  uint64_t sink = HotLoop(400'000'000) + ColdLoop(100'000'000);

  const pid_t pid = fork();
  if (pid == 0) {
    if (!backendlab::profiling::Sampler::RestartAfterFork(child).ok()) _exit(1);
    backendlab::profiling::SetSampleTag(2);
    sink += OnlyInChild(200'000'000);
    _exit(sink == 42 ? 3 : 0);  // _exit: the samples must survive it in shared memory
  }
  int status = 0;
  waitpid(pid, &status, 0);
  backendlab::profiling::Sampler::Stop();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "sampler_probe: child failed (status %d)\n", status);
    return 1;
  }

  backendlab::profiling::Symbolizer symbolizer;
  const std::vector<RawSample> parent_samples = backendlab::profiling::CopySamples(*parent);
  const std::vector<RawSample> child_samples = backendlab::profiling::CopySamples(*child);
  auto with_role = [](const char* role) {
    return [role](const RawSample& s) { return std::vector<std::string>{role, "[tag" + std::to_string(s.tag) + "]"}; };
  };
  std::fputs(backendlab::profiling::FoldSamples(parent_samples, symbolizer, {.keep = nullptr, .prefix = with_role("parent")})
                 .ToText()
                 .c_str(),
             stdout);
  std::fputs(backendlab::profiling::FoldSamples(child_samples, symbolizer, {.keep = nullptr, .prefix = with_role("child")})
                 .ToText()
                 .c_str(),
             stdout);
  for (const RawSample& s : child_samples) {
    if (s.pid != pid) {
      std::fprintf(stderr, "sampler_probe: a child sample carries pid %d, not %d\n", s.pid, pid);
      return 1;
    }
  }
  return sink == 42 ? 3 : 0;
}
