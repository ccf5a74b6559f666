// The built-in sampler as a shared object for LD_PRELOAD (libbackendlab_sampler.so):
// started by its constructor in the one process the tool names (a real
// server's postmaster), re-armed in every process that one forks, writing
// into the sample file the tool made; idle, and saying so in one line of
// stderr (the server's log), in any other process.
//
// Built without sanitizers (an instrumented object would need the sanitizer
// runtime in the server) and linked with libc and libunwind only: no Abseil,
// no C++ runtime, nothing allocated after the constructor.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "base/ld_preload.h"
#include "base/signal_safe.h"
#include "profiling/internal/sample_file_header.h"
#include "profiling/internal/sampler_core.h"

namespace backendlab::profiling {
namespace {

using internal::CoreError;
using internal::SampleFileHeader;

using MaskFunction = int (*)(int, const sigset_t*, sigset_t*);
using ActionFunction = int (*)(int, const struct sigaction*, struct sigaction*);

// libc's own functions, which the wrappers at the end pass calls on to.
// Looked up in the constructor (a wrapper called from a signal handler must
// not call dlsym), or at the first call if another object's constructor runs
// before ours.
std::atomic<MaskFunction> g_real_sigprocmask{nullptr};
std::atomic<MaskFunction> g_real_pthread_sigmask{nullptr};
std::atomic<ActionFunction> g_real_sigaction{nullptr};

// Set once this process samples; cleared in a child whose timer could not be
// armed. While it is set the wrappers keep SIGPROF unblocked.
std::atomic<bool> g_active{false};
SampleFileHeader* g_header = nullptr;
SampleBuffer* g_buffer = nullptr;
// The test seam's choice (kFailTimerEnv), kept for forked children.
bool g_fail_children = false;
// The program's name as it started: a server rewrites its argv (and so
// program_invocation_short_name) for ps.
char g_program[64] = "?";

template <typename Function>
Function Real(std::atomic<Function>& slot, const char* name) {
  Function f = slot.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
    slot.store(f, std::memory_order_release);
  }
  return f;
}

// One line, built without stdio (it is also said from a forked child).
class Line {
 public:
  Line& operator<<(const char* text) {
    const size_t n = strnlen(text, sizeof buf_ - 1 - size_);  // room kept for the newline
    memcpy(buf_ + size_, text, n);
    size_ += n;
    return *this;
  }
  Line& operator<<(int64_t value) {
    char digits[kDecimalBytes];
    FormatDecimal(value, digits);
    return *this << digits;
  }
  // To stderr: a postmaster's, as the tool starts it, is the server's log.
  void Say() {
    buf_[size_++] = '\n';
    for (size_t done = 0; done < size_;) {
      const ssize_t n = write(STDERR_FILENO, buf_ + done, size_ - done);
      if (n <= 0 && errno != EINTR) break;
      if (n > 0) done += static_cast<size_t>(n);
    }
  }

 private:
  char buf_[512];
  size_t size_ = 0;
};

Line Prefix() {
  Line line;
  line << "backendlab sampler: pid " << static_cast<int64_t>(getpid()) << " (" << g_program << "): ";
  return line;
}

// Drops the tool's variables and this library from LD_PRELOAD
// (base/ld_preload.h), so that nothing this process runs loads the library
// again: a program the server execs (archive_command, COPY ... PROGRAM) is
// left alone, and a stray process says so once, not once per descendant.
void ForgetEnvironment() {
  unsetenv(internal::kSampleFileEnv);
  unsetenv(internal::kSampledPidEnv);
  unsetenv(internal::kFailTimerEnv);
  RemoveOwnLibraryFromLdPreload(reinterpret_cast<const void*>(&ForgetEnvironment));
}

// The file the tool made, mapped shared; nullptr with *why set if it cannot
// be used.
SampleFileHeader* MapSampleFile(const char* path, const char** why, int* err) {
  const int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *why = "cannot open the sample file";
    *err = errno;
    return nullptr;
  }
  struct stat st;
  void* memory = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(internal::kSampleBufferOffset + sizeof(SampleBuffer))) {
    memory = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    *err = errno;
  } else {
    *err = 0;
  }
  close(fd);
  if (memory == MAP_FAILED) {
    *why = "cannot map the sample file";
    return nullptr;
  }
  auto* header = static_cast<SampleFileHeader*>(memory);
  auto* buffer = reinterpret_cast<SampleBuffer*>(static_cast<char*>(memory) + internal::kSampleBufferOffset);
  if (header->magic != internal::kSampleFileMagic || header->version != internal::kSampleFileVersion ||
      header->file_bytes != static_cast<uint64_t>(st.st_size) || header->period_ns < 1 ||
      internal::kSampleBufferOffset + SampleBuffer::BytesFor(buffer->capacity) > header->file_bytes) {
    munmap(memory, static_cast<size_t>(st.st_size));
    *why = "the sample file is not one of this version of the tool";
    *err = 0;
    return nullptr;
  }
  return header;
}

void SayFailure(const char* what, const char* detail, int err) {
  Line line = Prefix();
  line << what;
  if (detail != nullptr) line << " " << detail;
  if (err != 0) line << ": " << strerrordesc_np(err);
  line << "; not sampled";
  line.Say();
}

// The pthread_atfork child handler: a timer for the new process (timers are
// not inherited by fork). A refusal leaves the child unsampled and says so,
// the first time any process of the server meets it.
void RearmInChild() {
  if (!g_active.load(std::memory_order_relaxed)) return;
  const CoreError armed = g_fail_children ? CoreError{EAGAIN, "timer_create"} : internal::RestartSamplingAfterFork(g_buffer);
  if (armed.ok()) {
    g_header->armed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  g_active.store(false, std::memory_order_relaxed);
  g_header->failed.fetch_add(1, std::memory_order_relaxed);
  if (g_header->said_failure.exchange(1, std::memory_order_relaxed) == 0) {
    Line line = Prefix();
    line << "the sampling timer of a forked process could not be armed (" << armed.call << ": "
         << strerrordesc_np(armed.err)
         << "); it runs unsampled, and so does every later one that meets the same (said once, counted in the sample "
            "file)";
    line.Say();
  }
}

__attribute__((constructor)) void StartIfAsked() {
  Real(g_real_sigprocmask, "sigprocmask");
  Real(g_real_pthread_sigmask, "pthread_sigmask");
  Real(g_real_sigaction, "sigaction");
  strncpy(g_program, program_invocation_short_name, sizeof g_program - 1);
  // What the tool said, copied: ForgetEnvironment drops the variables.
  const char* file = getenv(internal::kSampleFileEnv);
  const char* expected = getenv(internal::kSampledPidEnv);
  const char* fail = getenv(internal::kFailTimerEnv);
  char path[4096] = "";
  if (file != nullptr) strncpy(path, file, sizeof path - 1);
  const long expected_pid = expected != nullptr ? strtol(expected, nullptr, 10) : 0;
  const bool fail_postmaster = fail != nullptr && strcmp(fail, "postmaster") == 0;
  g_fail_children = fail != nullptr && strcmp(fail, "children") == 0;
  ForgetEnvironment();

  if (path[0] == '\0') {
    SayFailure("idle:", "BACKENDLAB_SAMPLER_FILE is not set (the library is loaded, but not by backendlab pg)", 0);
    return;
  }
  if (expected_pid != static_cast<long>(getpid())) {
    Line line = Prefix();
    line << "idle: not the process the tool started (BACKENDLAB_SAMPLER_PID is "
         << static_cast<int64_t>(expected_pid) << "); not sampled";
    line.Say();
    return;
  }
  const char* why = nullptr;
  int err = 0;
  SampleFileHeader* header = MapSampleFile(path, &why, &err);
  if (header == nullptr) {
    SayFailure(why, path, err);
    return;
  }
  auto* buffer = reinterpret_cast<SampleBuffer*>(reinterpret_cast<char*>(header) + internal::kSampleBufferOffset);
  internal::SetSamplingGate(&header->recording);
  internal::CoreOptions options;
  options.period_ns = header->period_ns;
  options.clock = CLOCK_PROCESS_CPUTIME_ID;  // where the server's CPU goes, as perf's cpu-clock
  options.frame_pointers = false;            // Debian's server has none: libunwind reads .eh_frame
  options.cache_unwind_info = false;         // a backend's unwinds are all first ones
  const CoreError started = fail_postmaster ? CoreError{EAGAIN, "timer_create"} : internal::StartSampling(options, buffer);
  if (!started.ok()) {
    internal::SetSamplingGate(nullptr);
    header->failed.fetch_add(1, std::memory_order_relaxed);
    header->said_failure.store(1, std::memory_order_relaxed);
    SayFailure("the sampling timer could not be armed:", started.call, started.err);
    return;
  }
  g_header = header;
  g_buffer = buffer;
  header->armed.fetch_add(1, std::memory_order_relaxed);
  header->sampler_pid.store(static_cast<int32_t>(getpid()), std::memory_order_release);
  g_active.store(true, std::memory_order_release);
  if (const int e = pthread_atfork(nullptr, nullptr, RearmInChild); e != 0) {
    Line line = Prefix();
    line << "pthread_atfork: " << strerrordesc_np(e) << "; forked processes will not be sampled";
    line.Say();
  }
  Line line = Prefix();
  line << "sampling this process and every process it forks (" << static_cast<int64_t>(header->frequency_hz)
       << " Hz of CPU time, libunwind) while the tool records, into " << path;
  line.Say();
}

// A signal set without SIGPROF, if the caller would block it while this
// process samples (not in the handler: MaskCallInHandler).
const sigset_t* KeepSigprof(int how, const sigset_t* set, sigset_t* copy) {
  if (set == nullptr || how == SIG_UNBLOCK || !g_active.load(std::memory_order_relaxed) ||
      sigismember(set, SIGPROF) != 1) {
    return set;
  }
  *copy = *set;
  sigdelset(copy, SIGPROF);
  return copy;
}

// A mask call made inside the SIGPROF handler of a sampling process:
// libunwind's block-everything-then-restore pair around each lookup in the
// loader's list of objects, two system calls per return address it has not
// seen, which in a backend is nearly every one. They change nothing the
// handler needs — SIGPROF is blocked there already, nothing else in the
// server unwinds, and the kernel restores the interrupted mask when the
// handler returns, whatever it was set to meanwhile — so they are answered
// here, without the kernel; `old` reads as everything blocked. Measured on a
// real server: the sampling cost 8.9 % of conn/s with them, 4.4 % without.
bool MaskCallInHandler(sigset_t* old) {
  if (!g_active.load(std::memory_order_relaxed) || !internal::InSamplingHandler()) return false;
  if (old != nullptr) sigfillset(old);
  return true;
}

}  // namespace
}  // namespace backendlab::profiling

// The server blocks signals where it does real work (PostgreSQL ≤ 15's
// postmaster everywhere but in its select(), each child from fork until
// PostgresMain's BaseInit is done, every handler of the postmaster): a
// SIGPROF blocked there would be taken where the block ends, and its sample
// charged to that sigprocmask call. So while the process samples, these
// three leave SIGPROF out of what they block; everything else passes through
// unchanged. SIGPROF's handler touches nothing of the server's and restarts
// interrupted calls (SA_RESTART), so the server cannot tell. Inside the
// handler, the two mask calls do not reach the kernel (MaskCallInHandler).
using backendlab::profiling::g_real_pthread_sigmask;
using backendlab::profiling::g_real_sigaction;
using backendlab::profiling::g_real_sigprocmask;
using backendlab::profiling::KeepSigprof;
using backendlab::profiling::MaskCallInHandler;
using backendlab::profiling::Real;

extern "C" __attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t* set,
                                                                  sigset_t* old) noexcept {
  if (MaskCallInHandler(old)) return 0;
  sigset_t copy;
  return Real(g_real_sigprocmask, "sigprocmask")(how, KeepSigprof(how, set, &copy), old);
}

extern "C" __attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t* set,
                                                                      sigset_t* old) noexcept {
  if (MaskCallInHandler(old)) return 0;
  sigset_t copy;
  return Real(g_real_pthread_sigmask, "pthread_sigmask")(how, KeepSigprof(how, set, &copy), old);
}

extern "C" __attribute__((visibility("default"))) int sigaction(int signal, const struct sigaction* action,
                                                                struct sigaction* old) noexcept {
  struct sigaction copy;
  sigset_t mask;
  if (action != nullptr && KeepSigprof(SIG_BLOCK, &action->sa_mask, &mask) == &mask) {
    copy = *action;
    copy.sa_mask = mask;
    action = &copy;
  }
  return Real(g_real_sigaction, "sigaction")(signal, action, old);
}
