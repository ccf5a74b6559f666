// The SIGPROF sampler: timer set-up outside signal context, and the handler.
#include "profiling/sampler.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ucontext.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"

namespace backendlab::profiling {
namespace {

// unw_backtrace starts in the handler: its own frame and the signal
// trampoline come before the interrupted one, which is found by its pc.
constexpr int kHandlerFrames = 8;

// State the handler reads. Written only outside signal context, before the
// timer is armed (or, for the buffer, with an atomic store).
std::atomic<SampleBuffer*> g_buffer{nullptr};
std::atomic<int32_t> g_tag{0};
int32_t g_pid = 0;
Unwinder g_unwinder = Unwinder::kLibunwind;
// The sampled thread's stack, for the frame-pointer walk: [low, high).
uintptr_t g_stack_low = 0;
uintptr_t g_stack_high = 0;

// State of the controlling functions.
bool g_started = false;
bool g_timer_armed = false;
pid_t g_timer_pid = 0;  // the process whose timer g_timer is (fork copies the id, not the timer)
timer_t g_timer{};
SamplerOptions g_options;
struct sigaction g_old_action {};

absl::Status Errno(std::string_view what) {
  return absl::UnavailableError(absl::StrCat(std::string(what), ": ", std::strerror(errno)));
}

// Follows the chain of saved frame pointers from the interrupted context.
// Every load is checked to lie between the interrupted stack pointer and the
// stack's top, all mapped memory, so a frame without a frame pointer (libc's,
// say) ends the walk instead of faulting. ASan is off here: the walk reads
// other frames' saved slots, which its instrumentation does not expect.
__attribute__((no_sanitize("address"))) int WalkFramePointers(const ucontext_t& uc, uintptr_t* out, bool* truncated) {
  const uintptr_t sp = static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RSP]);
  uintptr_t fp = static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RBP]);
  int n = 0;
  out[n++] = static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RIP]);
  // Interrupted on another stack (a sigaltstack, another thread's): [sp,
  // high) would span unmapped memory, so the leaf alone.
  if (sp < g_stack_low || sp >= g_stack_high) return n;
  while (fp >= sp && fp % sizeof(uintptr_t) == 0 && fp + 2 * sizeof(uintptr_t) <= g_stack_high) {
    const uintptr_t* frame = reinterpret_cast<const uintptr_t*>(fp);
    const uintptr_t next = frame[0];
    const uintptr_t ret = frame[1];
    if (ret == 0) break;
    if (n == kMaxFrames) {
      *truncated = true;
      break;
    }
    out[n++] = ret;
    if (next <= fp) break;  // the chain must move toward the stack's top
    fp = next;
  }
  return n;
}

int Unwind(const ucontext_t& uc, uintptr_t* out, bool* truncated) {
  const uintptr_t interrupted = static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RIP]);
  std::array<void*, kMaxFrames + kHandlerFrames> frames;
  const int n = unw_backtrace(frames.data(), static_cast<int>(frames.size()));
  int first = 0;
  while (first < n && first < kHandlerFrames && reinterpret_cast<uintptr_t>(frames[first]) != interrupted) ++first;
  if (first >= n || first >= kHandlerFrames) {
    out[0] = interrupted;  // could not unwind through the signal frame: the leaf alone
    return 1;
  }
  const int depth = std::min(n - first, kMaxFrames);
  if (n == static_cast<int>(frames.size()) || n - first > kMaxFrames) *truncated = true;
  for (int i = 0; i < depth; ++i) out[i] = reinterpret_cast<uintptr_t>(frames[first + i]);
  return depth;
}

void OnSigprof(int, siginfo_t* info, void* context) {
  if (info->si_code != SI_TIMER) return;  // only our timer's signals are samples
  const int saved_errno = errno;
  SampleBuffer* buffer = g_buffer.load(std::memory_order_acquire);
  if (buffer != nullptr) {
    const uint32_t i = buffer->reserved.fetch_add(1, std::memory_order_relaxed);
    if (i >= buffer->capacity) {
      buffer->dropped.fetch_add(1, std::memory_order_relaxed);
    } else {
      RawSample& s = buffer->samples()[i];
      const ucontext_t& uc = *static_cast<const ucontext_t*>(context);
      bool truncated = false;
      s.pid = g_pid;
      s.tag = g_tag.load(std::memory_order_relaxed);
      s.overruns = std::max(0, info->si_overrun);
      s.depth = g_unwinder == Unwinder::kFramePointers ? WalkFramePointers(uc, s.pcs, &truncated)
                                                       : Unwind(uc, s.pcs, &truncated);
      if (truncated) buffer->truncated.fetch_add(1, std::memory_order_relaxed);
      buffer->committed.store(i + 1, std::memory_order_release);
    }
  }
  errno = saved_errno;
}

absl::Status ArmTimer() {
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = SIGPROF;
  event._sigev_un._tid = gettid();  // glibc has no name for this field
  const clockid_t clock = g_options.clock == SampleClock::kCpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
  if (timer_create(clock, &event, &g_timer) != 0) return Errno("timer_create");
  // From here the handler may run: it reads only what is set above.
  const int64_t period = Sampler::PeriodNs();
  itimerspec spec{};
  spec.it_interval.tv_sec = period / 1'000'000'000;
  spec.it_interval.tv_nsec = period % 1'000'000'000;
  // The first expiry at a random point of the first period: a process that
  // lives a few periods (a backend) would otherwise never be sampled in its
  // first period, and its start-up would be under-counted.
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  uint64_t x = static_cast<uint64_t>(now.tv_nsec) ^ (static_cast<uint64_t>(g_pid) << 32);
  x *= 0x9E3779B97F4A7C15ull;
  const int64_t first = 1 + static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(period));
  spec.it_value.tv_sec = first / 1'000'000'000;
  spec.it_value.tv_nsec = first % 1'000'000'000;
  if (timer_settime(g_timer, 0, &spec, nullptr) != 0) {
    absl::Status s = Errno("timer_settime");
    timer_delete(g_timer);
    return s;
  }
  g_timer_armed = true;
  g_timer_pid = getpid();
  return absl::OkStatus();
}

// The calling thread's stack bounds; both 0 (no frame-pointer walk beyond
// the leaf) if they cannot be had.
void FindStack() {
  g_stack_low = g_stack_high = 0;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* low = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &low, &size) == 0) {
    g_stack_low = reinterpret_cast<uintptr_t>(low);
    g_stack_high = g_stack_low + size;
  }
  pthread_attr_destroy(&attr);
}

}  // namespace

size_t SampleBuffer::BytesFor(uint32_t capacity) {
  return sizeof(SampleBuffer) + size_t{capacity} * sizeof(RawSample);
}

SampleBuffer* SampleBuffer::Init(void* memory, uint32_t capacity) {
  auto* buffer = new (memory) SampleBuffer;
  buffer->capacity = capacity;
  buffer->Reset();
  return buffer;
}

void SampleBuffer::Reset() {
  reserved.store(0, std::memory_order_relaxed);
  committed.store(0, std::memory_order_relaxed);
  dropped.store(0, std::memory_order_relaxed);
  truncated.store(0, std::memory_order_relaxed);
}

uint32_t SampleBuffer::size() const { return std::min(committed.load(std::memory_order_acquire), capacity); }

absl::StatusOr<MappedSampleBuffer> MappedSampleBuffer::Create(uint32_t capacity) {
  const size_t bytes = SampleBuffer::BytesFor(capacity);
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("mmap of a ", bytes, "-byte sample buffer: ", std::strerror(errno)));
  }
  return MappedSampleBuffer(memory, bytes, SampleBuffer::Init(memory, capacity));
}

MappedSampleBuffer::MappedSampleBuffer(MappedSampleBuffer&& other) noexcept
    : memory_(std::exchange(other.memory_, nullptr)), bytes_(other.bytes_), buffer_(std::exchange(other.buffer_, nullptr)) {}

MappedSampleBuffer::~MappedSampleBuffer() {
  if (memory_ != nullptr) munmap(memory_, bytes_);
}

absl::Status Sampler::Start(const SamplerOptions& options, SampleBuffer* buffer) {
  if (g_started) return absl::FailedPreconditionError("the sampler is already running in this process");
  if (options.frequency_hz < 1 || options.frequency_hz > 100'000) {
    return absl::InvalidArgumentError(absl::StrCat("sampling frequency must be 1..100000 Hz, not ", options.frequency_hz));
  }
  g_options = options;
  g_unwinder = options.unwinder;
  // The first unw_backtrace initialises libunwind (a lock, allocation, reading
  // the unwind tables of every loaded object): do it here, not in the handler.
  // Per-thread caching keeps the handler off libunwind's global cache lock.
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  std::array<void*, 4> warm;
  unw_backtrace(warm.data(), static_cast<int>(warm.size()));

  struct sigaction action {};
  action.sa_sigaction = OnSigprof;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGPROF, &action, &g_old_action) != 0) return Errno("sigaction(SIGPROF)");
  g_started = true;
  if (absl::Status s = RestartAfterFork(buffer); !s.ok()) {
    Stop();
    return s;
  }
  return absl::OkStatus();
}

absl::Status Sampler::RestartAfterFork(SampleBuffer* buffer) {
  if (!g_started) return absl::FailedPreconditionError("the sampler was not started");
  g_pid = getpid();
  if (g_timer_armed && g_timer_pid == g_pid) {  // not a fork after all: replace our own timer
    timer_delete(g_timer);
  }
  g_timer_armed = false;  // a fork's child has no timer; the parent's id is not ours
  FindStack();  // a child forked from another thread runs on that thread's stack
  g_buffer.store(buffer, std::memory_order_release);
  return ArmTimer();
}

void Sampler::Stop() {
  if (!g_started) return;
  sigset_t prof, old;
  sigemptyset(&prof);
  sigaddset(&prof, SIGPROF);
  pthread_sigmask(SIG_BLOCK, &prof, &old);
  if (g_timer_armed && g_timer_pid == getpid()) timer_delete(g_timer);  // a parent's id may name a timer of ours
  g_timer_armed = false;
  // A signal the timer raised before it was deleted may be pending: take it
  // now, or the restored disposition (SIGPROF's default terminates) gets it.
  timespec zero{};
  while (sigtimedwait(&prof, nullptr, &zero) == SIGPROF) {
  }
  g_buffer.store(nullptr, std::memory_order_release);
  sigaction(SIGPROF, &g_old_action, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  g_started = false;
}

bool Sampler::Running() { return g_started; }

void Sampler::SetBuffer(SampleBuffer* buffer) { g_buffer.store(buffer, std::memory_order_release); }

int64_t Sampler::PeriodNs() { return 1'000'000'000 / std::max(1, g_options.frequency_hz); }

void SetSampleTag(int32_t tag) { g_tag.store(tag, std::memory_order_relaxed); }
int32_t SampleTag() { return g_tag.load(std::memory_order_relaxed); }

std::vector<RawSample> CopySamples(const SampleBuffer& buffer) {
  const uint32_t n = buffer.size();
  return std::vector<RawSample>(buffer.samples(), buffer.samples() + n);
}

}  // namespace backendlab::profiling
