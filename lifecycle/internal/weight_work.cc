// A weight profile's work: pages, a file, system calls, CPU, libraries.
#include "lifecycle/internal/weight_work.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/private_dir.h"
#include "base/private_pages.h"
#include "base/resource_usage.h"

// glibc: runs the exit handlers registered for `dso` (every one for NULL).
extern "C" void __cxa_finalize(void* dso);

namespace backendlab::lifecycle::internal {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kReadChunk = 8192;  // PostgreSQL reads its relcache init file in such pieces and smaller

// The CPU loop: a xorshift step per turn, its result kept so that the
// compiler cannot drop it.
volatile uint64_t g_sink;

void Turns(uint64_t turns) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint64_t i = 0; i < turns; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  g_sink = x;
}

// The pages a backend's phases touched (TouchPages(.., true)), for a
// thread's ReleaseWeightPages; a forked backend's go with the process. A
// fixed array, no allocation: a phase's faults are its pages' alone. One
// mapping per phase of BackendWeight.
struct TouchedPages {
  std::pair<void*, size_t> mappings[3];
  int n = 0;
};
thread_local TouchedPages t_backend_pages;

// Pages written once each, mapped for the rest of the process's life, or,
// `backend`'s, until ReleaseWeightPages.
absl::Status TouchPages(int64_t pages, bool backend) {
  if (pages <= 0) return absl::OkStatus();
  const size_t bytes = static_cast<size_t>(pages) * kPage;
  void* p = MapPrivatePages(bytes);
  if (p == nullptr) return absl::UnavailableError(absl::StrCat("mmap of ", pages, " pages: ", std::strerror(errno)));
  auto* bytes_p = static_cast<volatile char*>(p);
  for (size_t off = 0; off < bytes; off += kPage) bytes_p[off] = 1;
  if (backend) {
    BACKENDLAB_CHECK(t_backend_pages.n < 3);
    t_backend_pages.mappings[t_backend_pages.n++] = {p, bytes};
  }
  return absl::OkStatus();
}

absl::Status ReadFile(const std::string& path, int64_t bytes) {
  if (bytes <= 0) return absl::OkStatus();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
  char buf[kReadChunk];
  int64_t left = bytes;
  while (left > 0) {
    const ssize_t n = read(fd, buf, static_cast<size_t>(std::min<int64_t>(left, kReadChunk)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    left -= n;
  }
  close(fd);
  return absl::OkStatus();
}

// Each kind's one call, with arguments that change nothing: descriptors of
// /dev/null opened by `openat` calls and closed by `close` calls (a close
// with none open closes -1, still one call), one anonymous page per `mmap`
// unmapped by a `munmap`, queries for the rest.
absl::Status MakeSyscalls(const std::map<std::string, int64_t>& calls) {
  std::vector<int> fds;
  std::vector<void*> maps;
  char buf[16];
  struct stat st;
  sigset_t old_mask;
  struct sigaction old_action;
  static char scratch[kPage] __attribute__((aligned(4096)));
  auto count = [&](const char* kind) {
    auto it = calls.find(kind);
    return it == calls.end() ? int64_t{0} : it->second;
  };
  // An order in which each call has what it needs: opens before their uses
  // and closes, maps before unmaps.
  for (int64_t i = 0; i < count("openat"); ++i) fds.push_back(static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC)));
  const int fd = fds.empty() ? -1 : fds.front();
  for (int64_t i = 0; i < count("read"); ++i) (void)syscall(SYS_read, fd, buf, 1);
  for (int64_t i = 0; i < count("write"); ++i) (void)syscall(SYS_write, fd, "x", 1);
  for (int64_t i = 0; i < count("lseek"); ++i) (void)syscall(SYS_lseek, fd, 0, SEEK_SET);
  for (int64_t i = 0; i < count("fstat"); ++i) (void)syscall(SYS_fstat, fd, &st);
  for (int64_t i = 0; i < count("newfstatat"); ++i) (void)syscall(SYS_newfstatat, AT_FDCWD, "/", &st, 0);
  for (int64_t i = 0; i < count("mmap"); ++i) {
    maps.push_back(reinterpret_cast<void*>(
        syscall(SYS_mmap, nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)));
  }
  for (int64_t i = 0; i < count("mprotect"); ++i) (void)syscall(SYS_mprotect, scratch, kPage, PROT_READ | PROT_WRITE);
  for (int64_t i = 0; i < count("brk"); ++i) (void)syscall(SYS_brk, 0);
  for (int64_t i = 0; i < count("rt_sigprocmask"); ++i) (void)syscall(SYS_rt_sigprocmask, SIG_BLOCK, nullptr, &old_mask, 8);
  for (int64_t i = 0; i < count("rt_sigaction"); ++i) (void)syscall(SYS_rt_sigaction, SIGUSR2, nullptr, &old_action, 8);
  for (int64_t i = 0; i < count("getpid"); ++i) (void)syscall(SYS_getpid);
  for (int64_t i = 0; i < count("getrandom"); ++i) (void)syscall(SYS_getrandom, buf, sizeof buf, 0);
  for (int64_t i = 0; i < count("munmap"); ++i) {
    void* p = maps.empty() ? nullptr : maps.back();
    if (!maps.empty()) maps.pop_back();
    (void)syscall(SYS_munmap, p, p == nullptr ? 0 : kPage);
  }
  for (int64_t i = 0; i < count("close"); ++i) {
    const int c = fds.empty() ? -1 : fds.back();
    if (!fds.empty()) fds.pop_back();
    (void)syscall(SYS_close, c);
  }
  // What the counts left open stays open, as a backend's descriptors do
  // until it exits; maps likewise.
  return absl::OkStatus();
}

// The postmaster's RAND_bytes, found in PreparePostmaster.
using RandBytesFn = int (*)(unsigned char*, int);
RandBytesFn g_rand_bytes = nullptr;

}  // namespace

absl::StatusOr<std::shared_ptr<const WeightSupport>> WeightSupport::Prepare(const BackendWeight& weight) {
  std::shared_ptr<WeightSupport> s(new WeightSupport());
  s->weight_ = weight;
  const int64_t file_bytes = std::max({weight.startup.read_file_bytes, weight.work.read_file_bytes, weight.exit.read_file_bytes});
  if (file_bytes > 0) {
    absl::StatusOr<PrivateDir> dir = PrivateDir::Make("backendlab-weight");
    if (!dir.ok()) return dir.status();
    s->dir_ = std::move(*dir);
    s->file_path_ = s->dir_.path() + "/pg_internal.init";
    const int fd = open(s->file_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot create ", s->file_path_, ": ", std::strerror(errno)));
    std::vector<char> block(kReadChunk, '\x5a');
    for (int64_t left = file_bytes; left > 0;) {
      const ssize_t n = write(fd, block.data(), static_cast<size_t>(std::min<int64_t>(left, kReadChunk)));
      if (n <= 0) {
        const int err = errno;
        close(fd);
        return absl::UnavailableError(absl::StrCat("cannot write ", s->file_path_, ": ", std::strerror(err)));
      }
      left -= n;
    }
    close(fd);
  }
  for (const std::string& lib : weight.libraries) {
    if (dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      return absl::InvalidArgumentError(absl::StrCat("backend profile: postmaster.libraries: cannot load ", lib, ": ",
                                                     why != nullptr ? why : "?"));
    }
  }
  if (weight.random_bytes_per_fork > 0) {
    g_rand_bytes = reinterpret_cast<RandBytesFn>(dlsym(RTLD_DEFAULT, "RAND_bytes"));
    if (g_rand_bytes == nullptr) {
      return absl::InvalidArgumentError("backend profile: postmaster.random_bytes_per_fork: RAND_bytes not found in the libraries loaded");
    }
  }
  // The loop's rate: the best of a few 10 ms tries (the machine is shared;
  // the least disturbed try is the loop's own speed).
  constexpr uint64_t kTurns = 2'000'000;
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    const int64_t start = NowNs();
    Turns(kTurns);
    const int64_t ns = std::max<int64_t>(NowNs() - start, 1);
    best = std::max(best, static_cast<double>(kTurns) * 1000.0 / static_cast<double>(ns));
  }
  s->turns_per_us_ = best;
  return std::shared_ptr<const WeightSupport>(std::move(s));
}

WeightSupport::~WeightSupport() = default;  // dir_ goes, in the process that made it

void RunExitHandlers() {
  __cxa_finalize(nullptr);
  std::fflush(nullptr);
}

absl::Status PreparePostmaster(const WeightSupport& support) { return TouchPages(support.weight().postmaster_touch_pages, false); }

void WeightBeforeFork(const WeightSupport& support) {
  const int64_t n = support.weight().random_bytes_per_fork;
  if (n <= 0 || g_rand_bytes == nullptr) return;
  std::vector<unsigned char> buf(static_cast<size_t>(n));
  (void)g_rand_bytes(buf.data(), static_cast<int>(n));
}

absl::Status RunPhaseWeight(const WeightSupport& support, const PhaseWeight& phase) {
  if (absl::Status s = TouchPages(phase.touch_pages, true); !s.ok()) return s;
  if (absl::Status s = ReadFile(support.file_path(), phase.read_file_bytes); !s.ok()) return s;
  if (absl::Status s = MakeSyscalls(phase.syscalls); !s.ok()) return s;
  SpendCpu(support, phase.cpu_us);
  return absl::OkStatus();
}

void ReleaseWeightPages() {
  for (int i = 0; i < t_backend_pages.n; ++i) UnmapPrivatePages(t_backend_pages.mappings[i].first, t_backend_pages.mappings[i].second);
  t_backend_pages.n = 0;
}

void SpendCpu(const WeightSupport& support, double cpu_us) {
  if (cpu_us <= 0) return;
  Turns(static_cast<uint64_t>(cpu_us * support.loop_turns_per_us()));
}

}  // namespace backendlab::lifecycle::internal
