// vm.nr_hugepages grown for a run and put back: one put-back (PutBack)
// for the three paths that run it — the run's own end, its watchdog after a
// kill, the next run's start after a kill of both.
#include "pgreal/huge_pages.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/processes.h"
#include "base/signal_safe.h"

namespace backendlab::pgreal {
namespace {

constexpr char kNrHugePages[] = "/proc/sys/vm/nr_hugepages";
constexpr char kStateDirectory[] = "/run";
constexpr int64_t kMemoryLeftBytes = 1LL << 30;
// Room for a state file's line ("PID START OLD NEW\n", four numbers) and
// for more, to quote what an unreadable one holds.
constexpr size_t kStateBytes = 4 * kDecimalBytes + 8;

// ---- Async-signal-safe (the watchdog runs these in a forked child of a
// tool that may have other threads): open, read, write, close, unlink only.

// `path`'s first `size` - 1 bytes, NUL-terminated; their count, or -1 (errno set).
ssize_t ReadSmallFile(const char* path, char* buf, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < size) {
    const ssize_t n = read(fd, buf + got, size - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      errno = err;
      return -1;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  buf[got] = '\0';
  return static_cast<ssize_t>(got);
}

// `count` decimal numbers, one space between, a newline after the last and
// nothing else; false for any other text.
bool ParseNumbers(const char* text, int64_t* numbers, int count) {
  for (int i = 0; i < count; ++i) {
    if (*text < '0' || *text > '9') return false;
    int64_t n = 0;
    for (; *text >= '0' && *text <= '9'; ++text) {
      if (n > (INT64_MAX - 9) / 10) return false;
      n = n * 10 + (*text - '0');
    }
    numbers[i] = n;
    if (*text++ != (i + 1 < count ? ' ' : '\n')) return false;
  }
  return *text == '\0';
}

// vm.nr_hugepages, or -1 (errno set).
int64_t ReadNrHugePagesRaw() {
  char text[kDecimalBytes + 2];
  if (ReadSmallFile(kNrHugePages, text, sizeof text) < 0) return -1;
  int64_t n = -1;
  if (!ParseNumbers(text, &n, 1)) {
    errno = EIO;
    return -1;
  }
  return n;
}

// 0, or the errno of the failed open or write.
int WriteNrHugePagesRaw(int64_t n) {
  char text[kDecimalBytes + 1];
  size_t length = FormatDecimal(n, text);
  text[length++] = '\n';
  const int fd = open(kNrHugePages, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t written = write(fd, text, length);
  const int err = written == static_cast<ssize_t>(length) ? 0 : (written < 0 ? errno : EIO);
  close(fd);
  return err;
}

// What a put-back found and did.
enum class PutBack {
  kPutBack,      // the value was still the run's: the old one written back
  kAlreadyBack,  // the value was the old one again: nothing to do
  kLeft,         // someone else's value: left as it is
  kFailed,       // the value could not be read or written (`err`)
};
struct PutBackDone {
  PutBack what = PutBack::kFailed;
  int64_t now = -1;  // the value found
  int err = 0;
};

// The one put-back: the old value written only if the current one is still
// the value the run set.
PutBackDone PutBackIfUnchanged(int64_t old_pages, int64_t set_pages) {
  PutBackDone done;
  done.now = ReadNrHugePagesRaw();
  if (done.now < 0) {
    done.err = errno;
  } else if (done.now == old_pages) {
    done.what = PutBack::kAlreadyBack;
  } else if (done.now != set_pages) {
    done.what = PutBack::kLeft;
  } else if ((done.err = WriteNrHugePagesRaw(old_pages)) == 0) {
    done.what = PutBack::kPutBack;
  }
  return done;
}

// ---- The rest runs in the tool alone.

// A process's start time (/proc/PID/stat's 22nd field, in clock ticks
// since boot): with its pid, a name no later process can take.
int64_t StartTime(pid_t pid) {
  const std::optional<ProcStat> stat = ReadProcStat(pid);
  return stat ? stat->start_time : -1;
}

std::string StateLine(pid_t pid, int64_t old_pages, int64_t set_pages) {
  return absl::StrCat(pid, " ", StartTime(pid), " ", old_pages, " ", set_pages, "\n");
}

// What the state file holds.
struct Found {
  enum Kind { kNone, kLive, kEnded, kUnreadable } kind = kNone;
  int64_t pid = 0, old_pages = 0, set_pages = 0;  // kLive, kEnded
  std::string why;                                // kUnreadable: what was found instead
  bool empty = false;                             // kUnreadable: no byte at all
};

// `text` quoted for a one-line message: control characters as \xNN, and
// cut short.
std::string Quoted(const char* text) {
  std::string out = "'";
  const char* p = text;
  for (; *p != '\0' && out.size() < 40; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c != 0x7f) {
      out += *p;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out + (*p != '\0' ? "...'" : "'");
}

Found Inspect() {
  Found f;
  char text[kStateBytes];
  const ssize_t n = ReadSmallFile(kHugePagesStateFile, text, sizeof text);
  if (n < 0) {
    // Not root: a root run's file (0600) is none of this run's business.
    if (errno != ENOENT && errno != EACCES && errno != EPERM) {
      f.kind = Found::kUnreadable;
      f.why = absl::StrCat("it cannot be read: ", std::strerror(errno));
    }
    return f;
  }
  int64_t numbers[4];
  if (!ParseNumbers(text, numbers, 4) || numbers[2] >= numbers[3]) {
    f.kind = Found::kUnreadable;
    f.empty = n == 0;
    f.why = n == 0 ? std::string("it is empty") : absl::StrCat("it holds ", Quoted(text));
    return f;
  }
  f.pid = numbers[0];
  f.old_pages = numbers[2];
  f.set_pages = numbers[3];
  const bool alive = f.pid > 0 && f.pid <= INT32_MAX && StartTime(static_cast<pid_t>(f.pid)) == numbers[1];
  f.kind = alive ? Found::kLive : Found::kEnded;
  return f;
}

std::string HowToRemove(int64_t now) {
  return absl::StrCat("vm.nr_hugepages is ", now, ", which may hold the change of a run that was killed: once it is what ",
                      "this host should have, remove the file (rm ", kHugePagesStateFile, ")");
}

// The reservation's watchdog: the writing end of its pipe, closed in every
// process forked from the tool (a pthread_atfork handler), so that the
// watchdog sees end of file when the tool ends, not when its last child
// does. One reservation at a time per process (the state file is one).
std::atomic<int> g_watchdog_fd{-1};

void CloseWatchdogInChild() {
  const int fd = g_watchdog_fd.exchange(-1);
  if (fd >= 0) close(fd);
}

// The watchdog's body, in the forked child: waits for end of file on `fd`
// (the tool has ended, however), then, if the state file still holds
// exactly `state` (the run did not release it), puts the value back and
// removes the file. Async-signal-safe calls only; never returns.
[[noreturn]] void WatchUntilTheToolEnds(int fd, const char* state, int64_t old_pages, int64_t set_pages) {
  char byte;
  for (;;) {
    const ssize_t n = read(fd, &byte, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  char found[kStateBytes];
  if (ReadSmallFile(kHugePagesStateFile, found, sizeof found) >= 0 && std::strcmp(found, state) == 0) {
    (void)PutBackIfUnchanged(old_pages, set_pages);
    unlink(kHugePagesStateFile);
  }
  _exit(0);
}

}  // namespace

absl::StatusOr<int64_t> ReadNrHugePages() {
  const int64_t n = ReadNrHugePagesRaw();
  if (n < 0) return absl::UnavailableError(absl::StrCat("cannot read ", kNrHugePages, ": ", std::strerror(errno)));
  return n;
}

absl::StatusOr<HugePagePool> ReadHugePagePool() {
  std::ifstream in("/proc/meminfo");
  if (!in) return absl::UnavailableError("cannot read /proc/meminfo");
  HugePagePool pool;
  int64_t rsvd = 0;
  std::string name;
  int64_t value = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> name >> value)) continue;
    if (name == "HugePages_Total:") pool.total = value;
    if (name == "HugePages_Free:") pool.free = value;
    if (name == "HugePages_Rsvd:") rsvd = value;
    if (name == "Hugepagesize:") pool.page_bytes = value << 10;
    if (name == "MemAvailable:") pool.memory_available_bytes = value << 10;
  }
  if (pool.page_bytes == 0) return absl::UnavailableError("the kernel has no huge pages (no Hugepagesize in /proc/meminfo)");
  pool.free -= rsvd;
  return pool;
}

absl::StatusOr<std::unique_ptr<HugePageReservation>> HugePageReservation::Reserve(int64_t pages) {
  absl::StatusOr<HugePagePool> pool = ReadHugePagePool();
  if (!pool.ok()) return absl::InvalidArgumentError(absl::StrCat("`what_if`=huge-pages: ", pool.status().message()));
  std::unique_ptr<HugePageReservation> r(new HugePageReservation());
  const int64_t shortfall = pages - pool->free;
  if (shortfall <= 0) return r;
  if (geteuid() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("`what_if`=huge-pages: the servers need ", pages, " free huge pages and ",
                                                   pool->free, " are free; only root can reserve more (vm.nr_hugepages)"));
  }
  if (shortfall * pool->page_bytes > pool->memory_available_bytes - kMemoryLeftBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`what_if`=huge-pages: ", shortfall, " more huge pages (", (shortfall * pool->page_bytes) >> 20,
        " MiB) would leave less than 1 GiB of the ", pool->memory_available_bytes >> 20, " MiB available"));
  }
  absl::StatusOr<int64_t> old = ReadNrHugePages();
  if (!old.ok()) return old.status();
  r->old_ = *old;
  r->set_ = *old + shortfall;
  if (absl::Status s = r->Record(); !s.ok()) return s;
  r->held_ = true;
  r->owner_ = getpid();
  if (const int err = WriteNrHugePagesRaw(r->set_); err != 0) {
    (void)r->Release();
    return absl::InternalError(absl::StrCat("writing ", r->set_, " to ", kNrHugePages, ": ", std::strerror(err)));
  }
  absl::StatusOr<HugePagePool> now = ReadHugePagePool();
  if (!now.ok() || now->free < pages) {
    const int64_t got = now.ok() ? now->free : 0;
    (void)r->Release();
    return absl::FailedPreconditionError(absl::StrCat("`what_if`=huge-pages: the kernel gave ", got, " free huge pages of the ",
                                                      pages, " asked for (memory too fragmented or too little of it); ",
                                                      r->released_));
  }
  r->added_ = shortfall;
  return r;
}

absl::Status HugePageReservation::Record() {
  // The state file is made whole or not at all: written unnamed, then
  // linked into place, which fails if a file is there already. A change is
  // never made that a kill could leave unrecorded.
  const std::string state = StateLine(getpid(), old_, set_);
  const int fd = open(kStateDirectory, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot make ", kHugePagesStateFile, " (an unnamed file in ", kStateDirectory,
                                            "): ", std::strerror(errno)));
  }
  const bool written = write(fd, state.data(), state.size()) == static_cast<ssize_t>(state.size()) && fsync(fd) == 0;
  const std::string unnamed = absl::StrCat("/proc/self/fd/", fd);
  const int linked = written ? linkat(AT_FDCWD, unnamed.c_str(), AT_FDCWD, kHugePagesStateFile, AT_SYMLINK_FOLLOW) : -1;
  const int err = errno;
  close(fd);
  if (!written) return absl::InternalError(absl::StrCat("cannot write ", kHugePagesStateFile, ": ", std::strerror(err)));
  if (linked != 0 && err != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot make ", kHugePagesStateFile, ": ", std::strerror(err)));
  }
  if (linked != 0) {
    const Found other = Inspect();
    if (other.kind == Found::kLive) {
      return absl::InvalidArgumentError(absl::StrCat("`what_if`=huge-pages: another backendlab run (pid ", other.pid,
                                                     ") has grown vm.nr_hugepages; wait for it to end"));
    }
    if (other.kind == Found::kEnded) {
      return absl::InvalidArgumentError(absl::StrCat("`what_if`=huge-pages: ", kHugePagesStateFile, " names a run that has ended (pid ",
                                                      other.pid, "), found as this one was about to grow vm.nr_hugepages; "
                                                      "run again: a run's start puts back what it left"));
    }
    return absl::InvalidArgumentError(absl::StrCat("`what_if`=huge-pages: ", kHugePagesStateFile, " is not a state file this tool can ",
                                                   "read (", other.why, "); ", HowToRemove(old_)));
  }

  // The watchdog, before the value is changed: a child forked, not exec'd
  // (it needs only the system calls above), in a session of its own so
  // that a kill of the tool's process group does not reach it, holding no
  // descriptor of the tool's but the reading end of its pipe.
  static const int registered = pthread_atfork(nullptr, nullptr, CloseWatchdogInChild);
  (void)registered;
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) {
    unlink(kHugePagesStateFile);
    return absl::UnavailableError(absl::StrCat("the huge pages' watchdog: pipe: ", std::strerror(errno)));
  }
  char expected[kStateBytes];
  std::snprintf(expected, sizeof expected, "%s", state.c_str());
  const int64_t old_pages = old_, set_pages = set_;
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    struct sigaction defaults = {};
    defaults.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &defaults, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null_fd = open("/dev/null", O_RDWR);
    for (int fd_number : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) dup2(null_fd, fd_number);
    dup2(ends[0], 3);
    close_range(4, ~0U, 0);
    WatchUntilTheToolEnds(3, expected, old_pages, set_pages);
  }
  close(ends[0]);
  if (pid < 0) {
    const int fork_err = errno;
    close(ends[1]);
    unlink(kHugePagesStateFile);
    return absl::UnavailableError(absl::StrCat("the huge pages' watchdog: fork: ", std::strerror(fork_err)));
  }
  watchdog_pid_ = pid;
  watchdog_fd_ = ends[1];
  g_watchdog_fd.store(ends[1]);
  return absl::OkStatus();
}

HugePageReservation::~HugePageReservation() { Release().IgnoreError(); }

absl::Status HugePageReservation::Release() {
  if (!held_ || owner_ != getpid()) return absl::OkStatus();
  held_ = false;
  const PutBackDone done = PutBackIfUnchanged(old_, set_);
  // The state file first, then the watchdog's end of file: it finds no
  // file of this run's and leaves.
  unlink(kHugePagesStateFile);
  if (watchdog_fd_ >= 0) {
    int expected = watchdog_fd_;
    g_watchdog_fd.compare_exchange_strong(expected, -1);
    close(watchdog_fd_);
    watchdog_fd_ = -1;
  }
  if (watchdog_pid_ > 0) {
    while (waitpid(watchdog_pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    watchdog_pid_ = 0;
  }
  const std::string grown = absl::StrCat("vm.nr_hugepages was grown by ", set_ - old_, " for the run (", old_, " to ", set_, ")");
  switch (done.what) {
    case PutBack::kPutBack:
      released_ = absl::StrCat(grown, ", and put back to ", old_, " after it");
      return absl::OkStatus();
    case PutBack::kAlreadyBack:
    case PutBack::kLeft:
      released_ = absl::StrCat(grown, ", and left at ", done.now, " after it: someone else set it to that during the run");
      return absl::OkStatus();
    case PutBack::kFailed: break;
  }
  released_ = absl::StrCat(grown, ", and could not be put back to ", old_, ": ", std::strerror(done.err));
  return absl::InternalError(released_);
}

std::string RestoreHugePagesOfEndedRun() {
  const Found f = Inspect();
  if (f.kind == Found::kNone || f.kind == Found::kLive) return "";
  const char* file = kHugePagesStateFile;
  if (f.kind == Found::kUnreadable) {
    // An older version made the file, then wrote it: empty, it was killed
    // before any change. A pool of 0 holds no run's change either.
    const int64_t now = ReadNrHugePagesRaw();
    if (f.empty || now == 0) {
      if (unlink(file) != 0) return absl::StrCat("cannot remove ", file, " (", f.why, "): ", std::strerror(errno));
      return absl::StrCat("removed ", file, ": ", f.why, ", and ",
                          f.empty ? "a run writes it before it changes vm.nr_hugepages" : "vm.nr_hugepages is 0",
                          ": no change of a run is left to put back");
    }
    return absl::StrCat(file, " is not a state file this tool can read (", f.why, "); ", HowToRemove(now));
  }
  const PutBackDone done = PutBackIfUnchanged(f.old_pages, f.set_pages);
  const std::string run = absl::StrCat("a backendlab run (pid ", f.pid, ") that was killed");
  if (done.what == PutBack::kFailed) {
    return absl::StrCat("vm.nr_hugepages could not be put back to ", f.old_pages, " from the ", f.set_pages, " ", run,
                        " left (", std::strerror(done.err), "); ", file, " is kept");
  }
  unlink(file);
  switch (done.what) {
    case PutBack::kPutBack:
      return absl::StrCat("vm.nr_hugepages put back to ", f.old_pages, " from the ", f.set_pages, " ", run, " left");
    case PutBack::kAlreadyBack:
      return absl::StrCat("vm.nr_hugepages is back at ", f.old_pages, ", where ", run, " found it (it had set ", f.set_pages,
                          ")");
    default:
      return absl::StrCat("vm.nr_hugepages left at ", done.now, ": ", run, " had set it to ", f.set_pages, " from ",
                          f.old_pages, ", and it has changed since");
  }
}

}  // namespace backendlab::pgreal
