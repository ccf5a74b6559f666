// vm.nr_hugepages grown for a run and put back.
#include "pgreal/huge_pages.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace backendlab::pgreal {
namespace {

constexpr char kNrHugePages[] = "/proc/sys/vm/nr_hugepages";
constexpr int64_t kMemoryLeftBytes = 1LL << 30;

absl::Status WriteNrHugePages(int64_t n) {
  const int fd = open(kNrHugePages, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", kNrHugePages, ": ", std::strerror(errno)));
  const std::string text = absl::StrCat(n, "\n");
  const ssize_t written = write(fd, text.data(), text.size());
  const int err = errno;
  close(fd);
  if (written != static_cast<ssize_t>(text.size())) {
    return absl::InternalError(absl::StrCat("writing ", n, " to ", kNrHugePages, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

// A process's start time (/proc/PID/stat's 22nd field, in clock ticks
// since boot): with its pid, a name no later process can take.
int64_t StartTime(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end_of_name = text.rfind(')');
  if (end_of_name == std::string::npos) return -1;
  std::istringstream fields(text.substr(end_of_name + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return std::atoll(field.c_str());
  }
  return -1;
}

struct State {
  pid_t pid = 0;
  int64_t start_time = 0;
  int64_t old_pages = 0;
  int64_t set_pages = 0;
};

bool ReadState(State& state) {
  std::ifstream in(kHugePagesStateFile);
  return static_cast<bool>(in >> state.pid >> state.start_time >> state.old_pages >> state.set_pages);
}

bool Alive(const State& state) { return state.pid > 0 && StartTime(state.pid) == state.start_time; }

}  // namespace

absl::StatusOr<int64_t> ReadNrHugePages() {
  std::ifstream in(kNrHugePages);
  int64_t n = -1;
  if (!(in >> n) || n < 0) return absl::UnavailableError(absl::StrCat("cannot read ", kNrHugePages));
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
  // The state file first, made only if none is there: a live run's is its
  // own, and a change is never made that a kill could leave unrecorded.
  const int fd = open(kHugePagesStateFile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    State other;
    if (errno == EEXIST && ReadState(other)) {
      return absl::InvalidArgumentError(absl::StrCat("`what_if`=huge-pages: another backendlab run (pid ", other.pid,
                                                     ") has grown vm.nr_hugepages; wait for it to end"));
    }
    return absl::InternalError(absl::StrCat("cannot make ", kHugePagesStateFile, ": ", std::strerror(errno)));
  }
  const std::string state = absl::StrCat(getpid(), " ", StartTime(getpid()), " ", r->old_, " ", r->set_, "\n");
  const bool recorded = write(fd, state.data(), state.size()) == static_cast<ssize_t>(state.size()) && fsync(fd) == 0;
  close(fd);
  if (!recorded) {
    unlink(kHugePagesStateFile);
    return absl::InternalError(absl::StrCat("cannot write ", kHugePagesStateFile));
  }
  r->held_ = true;
  if (absl::Status s = WriteNrHugePages(r->set_); !s.ok()) {
    (void)r->Release();
    return s;
  }
  absl::StatusOr<HugePagePool> now = ReadHugePagePool();
  if (!now.ok() || now->free < pages) {
    const int64_t got = now.ok() ? now->free : 0;
    (void)r->Release();
    return absl::FailedPreconditionError(absl::StrCat("`what_if`=huge-pages: the kernel gave ", got, " free huge pages of the ",
                                                      pages, " asked for (memory too fragmented or too little of it); ",
                                                      "vm.nr_hugepages is put back to ", r->old_));
  }
  r->added_ = shortfall;
  return r;
}

HugePageReservation::~HugePageReservation() { Release().IgnoreError(); }

absl::Status HugePageReservation::Release() {
  if (!held_) return absl::OkStatus();
  held_ = false;
  absl::Status s = WriteNrHugePages(old_);
  unlink(kHugePagesStateFile);
  return s;
}

std::string RestoreHugePagesOfEndedRun() {
  State state;
  if (access(kHugePagesStateFile, F_OK) != 0 || !ReadState(state) || Alive(state)) return "";
  absl::StatusOr<int64_t> now = ReadNrHugePages();
  std::string said;
  if (now.ok() && *now == state.set_pages && WriteNrHugePages(state.old_pages).ok()) {
    said = absl::StrCat("vm.nr_hugepages put back to ", state.old_pages, " from the ", state.set_pages,
                        " a backendlab run (pid ", state.pid, ") left when it was killed");
  } else {
    said = absl::StrCat("vm.nr_hugepages left at ", now.ok() ? absl::StrCat(*now) : std::string("?"),
                        ": a backendlab run (pid ", state.pid, ") that was killed had set it to ", state.set_pages,
                        " from ", state.old_pages, ", and it has changed since");
  }
  unlink(kHugePagesStateFile);
  return said;
}

}  // namespace backendlab::pgreal
