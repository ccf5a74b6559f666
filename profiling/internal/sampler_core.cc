// The SIGPROF handler, its unwinders and the timer: everything of the
// sampler that both Sampler and the sampler library run.
#include "profiling/internal/sampler_core.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace backendlab::profiling::internal {
namespace {

// unw_backtrace starts in the handler: its own frame and the signal
// trampoline come before the interrupted one, which is found by its pc.
constexpr int kHandlerFrames = 8;
// CPU-time timers are checked once per tick of the process's running time;
// with a period under two of the shortest tick (1 ms, CONFIG_HZ=1000) every
// tick is a sample, or every other one at the least.
constexpr int64_t kEveryTickNs = 2'000'000;

// State the handler reads. Written only outside signal context, before the
// timer is armed (or, for the buffer, the tag and the gate, with atomic
// stores).
std::atomic<SampleBuffer*> g_buffer{nullptr};
std::atomic<int32_t> g_tag{0};
std::atomic<const std::atomic<uint32_t>*> g_gate{nullptr};
int32_t g_pid = 0;
bool g_frame_pointers = false;
// The sampled thread's stack, for the frame-pointer walk: [low, high).
uintptr_t g_stack_low = 0;
uintptr_t g_stack_high = 0;
// Handlers running now: the timer signals one thread, so this is that
// thread's nesting depth (SIGPROF is blocked while its handler runs: 0 or 1).
std::atomic<int> g_in_handler{0};

// State of the controlling functions.
bool g_started = false;
bool g_timer_armed = false;
pid_t g_timer_pid = 0;  // the process whose timer g_timer is (fork copies the id, not the timer)
timer_t g_timer{};
CoreOptions g_options;
struct sigaction g_old_action {};

CoreError Refused(const char* call) { return {errno != 0 ? errno : EINVAL, call}; }

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
  const std::atomic<uint32_t>* gate = g_gate.load(std::memory_order_relaxed);
  if (gate != nullptr && gate->load(std::memory_order_acquire) == 0) return;
  g_in_handler.fetch_add(1, std::memory_order_relaxed);
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
      const int depth = g_frame_pointers ? WalkFramePointers(uc, s.pcs, &truncated) : Unwind(uc, s.pcs, &truncated);
      if (truncated) buffer->truncated.fetch_add(1, std::memory_order_relaxed);
      // depth last: with several writers it is what says the slot is whole.
      std::atomic_ref<int32_t>(s.depth).store(depth, std::memory_order_release);
      buffer->committed.store(i + 1, std::memory_order_release);
    }
  }
  errno = saved_errno;
  g_in_handler.fetch_sub(1, std::memory_order_relaxed);
}

CoreError ArmTimer() {
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = SIGPROF;
  event._sigev_un._tid = gettid();  // glibc has no name for this field
  if (timer_create(g_options.clock, &event, &g_timer) != 0) return Refused("timer_create");
  // From here the handler may run: it reads only what is set above.
  const int64_t period = g_options.period_ns;
  itimerspec spec{};
  spec.it_interval.tv_sec = period / 1'000'000'000;
  spec.it_interval.tv_nsec = period % 1'000'000'000;
  // The first expiry at a random point of the first period: a process that
  // lives a few periods (a backend) would otherwise never be sampled in its
  // first period, and its start-up would be under-counted. But a CPU-time
  // timer is looked at only on the kernel's tick: with a period that short
  // (kEveryTickNs) it is due at nearly every tick, and a random first expiry
  // only skips the ticks before it — a backend's first millisecond, its
  // start-up, sampled at a fraction of the rate of the rest. Due at once,
  // the first tick of the process's running time samples it, as the later
  // ones do.
  int64_t first = 1;
  if (g_options.clock != CLOCK_PROCESS_CPUTIME_ID || period >= kEveryTickNs) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t x = static_cast<uint64_t>(now.tv_nsec) ^ (static_cast<uint64_t>(g_pid) << 32);
    x *= 0x9E3779B97F4A7C15ull;
    first = 1 + static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(period));
  }
  spec.it_value.tv_sec = first / 1'000'000'000;
  spec.it_value.tv_nsec = first % 1'000'000'000;
  if (timer_settime(g_timer, 0, &spec, nullptr) != 0) {
    const CoreError refused = Refused("timer_settime");
    timer_delete(g_timer);
    return refused;
  }
  g_timer_armed = true;
  g_timer_pid = getpid();
  return {};
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

CoreError StartSampling(const CoreOptions& options, SampleBuffer* buffer) {
  g_options = options;
  g_frame_pointers = options.frame_pointers;
  // The first unw_backtrace initialises libunwind (a lock, allocation, reading
  // the unwind tables of every loaded object): do it here, not in the handler.
  // Per-thread caching keeps the handler off libunwind's global cache lock.
  unw_set_caching_policy(unw_local_addr_space, options.cache_unwind_info ? UNW_CACHE_PER_THREAD : UNW_CACHE_NONE);
  std::array<void*, 4> warm;
  unw_backtrace(warm.data(), static_cast<int>(warm.size()));

  struct sigaction action {};
  action.sa_sigaction = OnSigprof;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGPROF, &action, &g_old_action) != 0) return Refused("sigaction(SIGPROF)");
  g_started = true;
  if (const CoreError armed = RestartSamplingAfterFork(buffer); !armed.ok()) {
    StopSampling();
    return armed;
  }
  return {};
}

CoreError RestartSamplingAfterFork(SampleBuffer* buffer) {
  if (!g_started) return {EINVAL, "the sampler was not started"};
  g_pid = getpid();
  if (g_timer_armed && g_timer_pid == g_pid) {  // not a fork after all: replace our own timer
    timer_delete(g_timer);
  }
  g_timer_armed = false;  // a fork's child has no timer; the parent's id is not ours
  // A child forked from another thread runs on that thread's stack. Only the
  // frame-pointer walk needs the bounds, and finding them reads
  // /proc/self/maps for the main thread: not paid in every fork otherwise.
  if (g_frame_pointers) FindStack();
  g_buffer.store(buffer, std::memory_order_release);
  return ArmTimer();
}

void StopSampling() {
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

bool SamplingStarted() { return g_started; }

void SetSamplingBuffer(SampleBuffer* buffer) { g_buffer.store(buffer, std::memory_order_release); }

int64_t SamplingPeriodNs() { return g_options.period_ns; }

void SetSamplingTag(int32_t tag) { g_tag.store(tag, std::memory_order_relaxed); }
int32_t SamplingTag() { return g_tag.load(std::memory_order_relaxed); }

void SetSamplingGate(const std::atomic<uint32_t>* gate) { g_gate.store(gate, std::memory_order_release); }

bool InSamplingHandler() { return g_in_handler.load(std::memory_order_relaxed) > 0; }

}  // namespace backendlab::profiling::internal
