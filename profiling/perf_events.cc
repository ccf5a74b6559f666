// perf_event_open for every counter backendlab reads: the events' attributes,
// the once-per-process probe, the reasons the kernel gives, and the reads.
#include "profiling/perf_events.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/names.h"

namespace backendlab::profiling {
namespace {

// Everything that differs between events, in PerfEvent order.
struct EventInfo {
  PerfEvent event;
  uint32_t type;
  uint64_t config;  // the tracepoint's is read from tracefs
  bool hardware;
  // Happens in the kernel: counted in user mode only (perf's fallback under
  // perf_event_paranoid 2) it reads 0 (seen for context-switches on Linux
  // 6.18), which is worse than no column.
  bool in_kernel;
};

constexpr EventInfo kEvents[] = {
    {PerfEvent::kTaskClock, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, false, false},
    {PerfEvent::kPageFaults, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false, false},
    {PerfEvent::kContextSwitches, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, false, true},
    {PerfEvent::kSyscalls, PERF_TYPE_TRACEPOINT, 0, false, true},
    {PerfEvent::kCycles, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, true, false},
    {PerfEvent::kInstructions, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, true, false},
    {PerfEvent::kCacheMisses, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, true, false},
    {PerfEvent::kStalledCyclesFrontend, PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, true, false},
    {PerfEvent::kStalledCyclesBackend, PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_STALLED_CYCLES_BACKEND, true, false},
};
constexpr size_t kNumEvents = std::size(kEvents);

constexpr bool InEnumOrder() {
  if (std::size(kAllPerfEvents) != kNumEvents) return false;
  for (size_t i = 0; i < kNumEvents; ++i) {
    if (static_cast<size_t>(kEvents[i].event) != i || kAllPerfEvents[i] != kEvents[i].event) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kEvents and kAllPerfEvents must list every PerfEvent once, in enum order: "
                             "the caches below are indexed by the enum");

size_t Index(PerfEvent event) { return static_cast<size_t>(event); }
const EventInfo& Info(PerfEvent event) { return kEvents[Index(event)]; }

// The groups ParsePerfEventList accepts besides single names.
constexpr std::string_view kGroups[] = {"all", "sw", "software", "hw"};

bool InGroup(std::string_view group, PerfEvent event) {
  if (group == "all") return true;
  if (group == "hw") return IsHardware(event);
  if (group == "sw" || group == "software") return Info(event).type == PERF_TYPE_SOFTWARE;
  return false;
}

// ---- Opening ---------------------------------------------------------------

long RealPerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

std::atomic<PerfEventOpenFn> g_open{&RealPerfEventOpen};

constexpr const char* kTracepointIdFiles[] = {
    "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
    "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
};

// raw_syscalls:sys_enter's id, or 0 where tracefs is not mounted. Read once
// per process: a backend that opens the counter should not also pay an open,
// a read and a close of the id file.
std::atomic<uint64_t> g_tracepoint_id{0};

uint64_t TracepointId() {
  if (const uint64_t id = g_tracepoint_id.load(std::memory_order_relaxed); id != 0) return id;
  for (const char* path : kTracepointIdFiles) {
    std::ifstream in(path);
    uint64_t id;
    if (in >> id && id != 0) {
      g_tracepoint_id.store(id, std::memory_order_relaxed);
      return id;
    }
  }
  return 0;
}

// The counter's type and config, or false where the event cannot be named
// (the tracepoint without tracefs).
bool Describe(PerfEvent event, perf_event_attr& attr) {
  attr.type = Info(event).type;
  attr.config = event == PerfEvent::kSyscalls ? TracepointId() : Info(event).config;
  return event != PerfEvent::kSyscalls || attr.config != 0;
}

// A counting counter of `pid` (0: the calling thread), enabled at once; -1
// with errno.
int OpenCounter(perf_event_attr attr, bool user_mode_only, pid_t pid = 0, bool inherit = false, int group_fd = -1) {
  attr.size = sizeof attr;
  // Time enabled and running let a multiplexed hardware count be scaled.
  attr.read_format |= PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  attr.exclude_kernel = user_mode_only;
  attr.exclude_hv = user_mode_only;
  attr.inherit = inherit;
  return static_cast<int>(g_open.load()(&attr, pid, -1 /* any cpu */, group_fd, PERF_FLAG_FD_CLOEXEC));
}

// syscalls:sys_enter_<name>'s id, or 0 where there is none (no tracefs, or
// no such system call on this kernel).
uint64_t SyscallTracepointId(std::string_view name) {
  for (const char* events : {"/sys/kernel/tracing/events/syscalls/", "/sys/kernel/debug/tracing/events/syscalls/"}) {
    std::ifstream in(absl::StrCat(events, "sys_enter_", std::string(name), "/id"));
    uint64_t id;
    if (in >> id && id != 0) return id;
  }
  return 0;
}

// ---- What the probe found, cached without a lock ---------------------------

enum class Outcome : uint32_t {
  kUnknown = 0,
  kCountsAll,       // kernel and user mode
  kCountsUserOnly,  // perf's fallback under perf_event_paranoid >= 2
  kRefused,         // perf_event_open failed with `err`
  kNoTracefs,       // the tracepoint's id could not be read
};

struct Probe {
  Outcome outcome;
  int err;
};

// One word per event, so that the cache needs no lock: any thread may probe,
// and a forked child never finds a lock held by a thread it does not have.
std::atomic<uint64_t> g_probes[kNumEvents];
std::atomic<bool> g_reported[kNumEvents];

uint64_t Pack(Probe p) { return uint64_t{static_cast<uint32_t>(p.outcome)} << 32 | static_cast<uint32_t>(p.err); }
Probe Unpack(uint64_t word) { return {static_cast<Outcome>(word >> 32), static_cast<int>(static_cast<uint32_t>(word))}; }
Probe Cached(PerfEvent event) { return Unpack(g_probes[Index(event)].load(std::memory_order_acquire)); }

bool Opens(Probe p) { return p.outcome == Outcome::kCountsAll || p.outcome == Outcome::kCountsUserOnly; }

// Opens `event` if it can be counted, probing it first if this process has not
// yet: one perf_event_open when the answer is known, up to two the first time.
// Returns what was found, with *fd the counter or -1. A refusal of an event
// known to open (EMFILE, say) is returned but not cached: it says nothing
// about the kernel.
Probe OpenOrProbe(PerfEvent event, int* fd) {
  *fd = -1;
  const Probe cached = Cached(event);
  if (cached.outcome == Outcome::kRefused || cached.outcome == Outcome::kNoTracefs) return cached;

  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  if (!Describe(event, attr)) {
    const Probe p{Outcome::kNoTracefs, ENOENT};
    g_probes[Index(event)].store(Pack(p), std::memory_order_release);
    return p;
  }
  if (Opens(cached)) {
    *fd = OpenCounter(attr, cached.outcome == Outcome::kCountsUserOnly);
    return *fd >= 0 ? cached : Probe{Outcome::kRefused, errno};
  }

  Probe found{Outcome::kCountsAll, 0};
  *fd = OpenCounter(attr, false);
  if (*fd < 0) {
    found = {Outcome::kRefused, errno};
    if ((found.err == EACCES || found.err == EPERM) && !Info(event).in_kernel) {
      *fd = OpenCounter(attr, true);
      found = *fd >= 0 ? Probe{Outcome::kCountsUserOnly, 0} : Probe{Outcome::kRefused, errno};
    }
  }
  // Two threads may probe at once; both find the same, and the first stores it.
  uint64_t unknown = Pack({Outcome::kUnknown, 0});
  g_probes[Index(event)].compare_exchange_strong(unknown, Pack(found), std::memory_order_acq_rel);
  return found;
}

// ---- Reasons ---------------------------------------------------------------

constexpr char kUnavailableInfix[] = ": unavailable: ";

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : absl::StrCat("errno ", err);
}

std::string RefusalReason(PerfEvent event, int err) {
  const std::string name = ErrnoName(err);
  if (err == ENOSYS) return "perf_event_open not supported by this kernel (ENOSYS)";
  if (err == EACCES || err == EPERM) {
    // At perf_event_paranoid 2 a thread may count itself in user mode, at 1
    // in the kernel too; above that only CAP_PERFMON lets it. Refused within
    // those limits, something other than the sysctl said no.
    const int needed = Info(event).in_kernel ? 1 : 2;
    const std::optional<int> level = PerfEventParanoid();
    const std::string shown = level ? absl::StrCat(*level) : "unreadable";
    if (level && *level <= needed) {
      return absl::StrCat("perf_event_open refused (", name, ") although /proc/sys/kernel/perf_event_paranoid is ",
                          shown, ": a seccomp filter (as in containers) or a security module forbids it");
    }
    return absl::StrCat("perf_event_open refused (", name, "): /proc/sys/kernel/perf_event_paranoid is ", shown,
                        "; as root: sysctl kernel.perf_event_paranoid=", needed, ", or run with CAP_PERFMON");
  }
  if (err == ENOENT && IsHardware(event)) {
    if (event != PerfEvent::kCycles && PerfEventAvailability(PerfEvent::kCycles).ok()) {
      return "this CPU's PMU has no such generic event (ENOENT)";
    }
    return "the kernel has no hardware PMU for this CPU (ENOENT: typical of VMs)";
  }
  return absl::StrCat("perf_event_open failed: ", std::strerror(err), " (", name, ")");
}

absl::Status UnavailableStatus(PerfEvent event, Probe p) {
  const std::string reason =
      p.outcome == Outcome::kNoTracefs
          ? "tracefs not mounted (no events/raw_syscalls/sys_enter/id under /sys/kernel/tracing); "
            "as root: mount -t tracefs nodev /sys/kernel/tracing"
          : RefusalReason(event, p.err);
  return absl::UnavailableError(absl::StrCat(std::string(PerfEventName(event)), kUnavailableInfix, reason));
}

// ---- Reading ---------------------------------------------------------------

int64_t ReadCounter(int fd) {
  struct {
    uint64_t value;
    uint64_t time_enabled;
    uint64_t time_running;
  } r;
  if (fd < 0 || read(fd, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) return -1;
  // Software counters, and hardware ones that had the PMU to themselves, ran
  // all the time they were enabled: exact.
  if (r.time_running == r.time_enabled) return static_cast<int64_t>(r.value);
  if (r.time_running == 0) return -1;
  return static_cast<int64_t>(static_cast<long double>(r.value) * r.time_enabled / r.time_running + 0.5L);
}

}  // namespace

std::string_view PerfEventName(PerfEvent event) { return NameOf(event, kPerfEventNames); }

std::optional<int> PerfEventParanoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int level;
  if (in >> level) return level;
  return std::nullopt;
}

absl::StatusOr<PerfEvent> ParsePerfEvent(std::string_view name) {
  return ParseName(name, kPerfEventNames, "perf event");
}

absl::StatusOr<std::vector<PerfEvent>> ParsePerfEventList(std::string_view comma_list) {
  std::vector<PerfEvent> events;
  auto add = [&](PerfEvent e) {
    if (std::find(events.begin(), events.end(), e) == events.end()) events.push_back(e);
  };
  size_t position = 1;
  for (std::string_view rest = comma_list;; ++position) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("empty perf event name (item ", position, " of '",
                                                     std::string(comma_list), "')"));
    }
    if (std::find(std::begin(kGroups), std::end(kGroups), item) != std::end(kGroups)) {
      for (PerfEvent e : kAllPerfEvents) {
        if (InGroup(item, e)) add(e);
      }
    } else {
      absl::StatusOr<PerfEvent> e = ParsePerfEvent(item);
      if (!e.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(e.status().message()), "; or a group: all, sw (software) or hw"));
      }
      add(*e);
    }
    if (comma == std::string_view::npos) return events;
    rest.remove_prefix(comma + 1);
  }
}

bool IsHardware(PerfEvent event) { return Info(event).hardware; }

absl::Status PerfEventAvailability(PerfEvent event) {
  Probe p = Cached(event);
  if (p.outcome == Outcome::kUnknown) {
    int fd;
    p = OpenOrProbe(event, &fd);
    if (fd >= 0) close(fd);
  }
  return Opens(p) ? absl::OkStatus() : UnavailableStatus(event, p);
}

void ReportUnavailableOnce(PerfEvent event, FILE* out) {
  const absl::Status status = PerfEventAvailability(event);
  if (status.ok() || g_reported[Index(event)].exchange(true)) return;
  std::fprintf(out, "backendlab: %s\n", std::string(status.message()).c_str());
}

PerfCounters PerfCounters::Open(std::span<const PerfEvent> events) {
  PerfCounters counters;
  for (PerfEvent event : events) {
    if (std::find(counters.events_.begin(), counters.events_.end(), event) != counters.events_.end()) continue;
    int fd;
    const Probe p = OpenOrProbe(event, &fd);
    counters.events_.push_back(event);
    counters.fds_.push_back(fd);
    counters.why_not_.push_back(fd >= 0 ? absl::OkStatus() : UnavailableStatus(event, p));
  }
  for (size_t i = 0; i < counters.events_.size(); ++i) counters.begin_order_.push_back(i);
  std::stable_partition(counters.begin_order_.begin(), counters.begin_order_.end(),
                        [&](size_t i) { return counters.events_[i] != PerfEvent::kSyscalls; });
  return counters;
}

PerfCounters PerfCounters::OpenProcess(pid_t pid, std::span<const PerfEvent> events) {
  PerfCounters counters;
  for (PerfEvent event : events) {
    if (std::find(counters.events_.begin(), counters.events_.end(), event) != counters.events_.end()) continue;
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    int fd = -1;
    Probe p{Outcome::kNoTracefs, ENOENT};
    if (Describe(event, attr)) {
      fd = OpenCounter(attr, false, pid, true);
      p = fd >= 0 ? Probe{Outcome::kCountsAll, 0} : Probe{Outcome::kRefused, errno};
    }
    counters.events_.push_back(event);
    counters.fds_.push_back(fd);
    counters.why_not_.push_back(fd >= 0 ? absl::OkStatus() : UnavailableStatus(event, p));
  }
  for (size_t i = 0; i < counters.events_.size(); ++i) counters.begin_order_.push_back(i);
  return counters;
}

PerfCounters::PerfCounters(PerfCounters&& other) noexcept
    : events_(std::exchange(other.events_, {})),
      fds_(std::exchange(other.fds_, {})),
      why_not_(std::exchange(other.why_not_, {})),
      begin_order_(std::exchange(other.begin_order_, {})) {}

PerfCounters& PerfCounters::operator=(PerfCounters&& other) noexcept {
  if (this != &other) {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
    events_ = std::exchange(other.events_, {});
    fds_ = std::exchange(other.fds_, {});
    why_not_ = std::exchange(other.why_not_, {});
    begin_order_ = std::exchange(other.begin_order_, {});
  }
  return *this;
}

PerfCounters::~PerfCounters() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

int64_t PerfCounters::Read(PerfEvent event) const {
  for (size_t i = 0; i < events_.size(); ++i) {
    if (events_[i] == event) return ReadCounter(fds_[i]);
  }
  return -1;
}

void PerfCounters::ReadAll(PhaseEdge edge, std::span<int64_t> out) const {
  BACKENDLAB_CHECK(out.size() == events_.size());
  if (edge == PhaseEdge::kBegin) {
    for (auto it = begin_order_.begin(); it != begin_order_.end(); ++it) out[*it] = ReadCounter(fds_[*it]);
  } else {
    for (auto it = begin_order_.rbegin(); it != begin_order_.rend(); ++it) out[*it] = ReadCounter(fds_[*it]);
  }
}

std::vector<absl::Status> PerfCounters::Unavailable() const {
  std::vector<absl::Status> missing;
  for (const absl::Status& s : why_not_) {
    if (!s.ok()) missing.push_back(s);
  }
  return missing;
}

bool HasSyscallTracepoint(std::string_view name) { return SyscallTracepointId(name) != 0; }

absl::StatusOr<SyscallCounters> SyscallCounters::Open(std::span<const std::string_view> names) {
  if (absl::Status s = PerfEventAvailability(PerfEvent::kSyscalls); !s.ok()) return s;
  SyscallCounters counters;
  std::vector<uint64_t> ids;
  for (std::string_view name : names) {
    if (std::find(counters.names_.begin(), counters.names_.end(), name) != counters.names_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("system call '", std::string(name), "' named twice"));
    }
    const uint64_t id = SyscallTracepointId(name);
    if (id == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("no tracepoint syscalls:sys_enter_", std::string(name), " on this kernel (not a system call name?)"));
    }
    if (name == "read") counters.read_index_ = static_cast<int>(counters.names_.size());
    counters.names_.emplace_back(name);
    ids.push_back(id);
  }
  // The leader counts every call; the members, in names_' order, join its
  // group, so that one read() of the leader returns them all.
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.config = TracepointId();
  attr.read_format = PERF_FORMAT_GROUP;
  const int leader = OpenCounter(attr, false);
  if (leader < 0) return UnavailableStatus(PerfEvent::kSyscalls, Probe{Outcome::kRefused, errno});
  counters.fds_.push_back(leader);
  for (uint64_t id : ids) {
    attr.config = id;
    attr.read_format = 0;
    const int fd = OpenCounter(attr, false, 0, false, leader);
    if (fd < 0) return UnavailableStatus(PerfEvent::kSyscalls, Probe{Outcome::kRefused, errno});
    counters.fds_.push_back(fd);
  }
  return counters;
}

absl::StatusOr<SyscallCounters> SyscallCounters::OpenProcess(pid_t pid, std::span<const std::string_view> names) {
  if (absl::Status s = PerfEventAvailability(PerfEvent::kSyscalls); !s.ok()) return s;
  SyscallCounters counters;
  counters.grouped_ = false;
  std::vector<uint64_t> ids = {TracepointId()};
  for (std::string_view name : names) {
    const uint64_t id = SyscallTracepointId(name);
    if (id == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("no tracepoint syscalls:sys_enter_", std::string(name), " on this kernel (not a system call name?)"));
    }
    counters.names_.emplace_back(name);
    ids.push_back(id);
  }
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_TRACEPOINT;
  for (uint64_t id : ids) {
    attr.config = id;
    const int fd = OpenCounter(attr, false, pid, /*inherit=*/true);
    if (fd < 0) return UnavailableStatus(PerfEvent::kSyscalls, Probe{Outcome::kRefused, errno});
    counters.fds_.push_back(fd);
  }
  return counters;
}

SyscallCounters::SyscallCounters(SyscallCounters&& other) noexcept
    : names_(std::exchange(other.names_, {})),
      fds_(std::exchange(other.fds_, {})),
      read_index_(std::exchange(other.read_index_, -1)),
      grouped_(std::exchange(other.grouped_, true)) {}

SyscallCounters& SyscallCounters::operator=(SyscallCounters&& other) noexcept {
  if (this != &other) {
    for (int fd : fds_) close(fd);
    names_ = std::exchange(other.names_, {});
    fds_ = std::exchange(other.fds_, {});
    read_index_ = std::exchange(other.read_index_, -1);
    grouped_ = std::exchange(other.grouped_, true);
  }
  return *this;
}

SyscallCounters::~SyscallCounters() {
  for (int fd : fds_) close(fd);
}

bool SyscallCounters::Read(Counts& out) const {
  if (fds_.empty()) return false;
  if (!grouped_) {
    out.by_kind.resize(fds_.size() - 1);
    for (size_t i = 0; i < fds_.size(); ++i) {
      const int64_t v = ReadCounter(fds_[i]);
      if (v < 0) return false;
      (i == 0 ? out.total : out.by_kind[i - 1]) = v;
    }
    return true;
  }
  // PERF_FORMAT_GROUP with the times: nr, time enabled, time running, then
  // one value per counter, the leader first. Tracepoints are software
  // counters: never multiplexed, so the values need no scaling.
  constexpr size_t kHeader = 3;
  uint64_t buffer[kHeader + 64];
  const size_t n = fds_.size();
  BACKENDLAB_CHECK(n <= 64);
  const ssize_t want = static_cast<ssize_t>((kHeader + n) * sizeof(uint64_t));
  if (read(fds_[0], buffer, static_cast<size_t>(want)) != want || buffer[0] != n) return false;
  out.by_kind.resize(n - 1);
  out.total = static_cast<int64_t>(buffer[kHeader]);
  for (size_t i = 1; i < n; ++i) out.by_kind[i - 1] = static_cast<int64_t>(buffer[kHeader + i]);
  return true;
}

SyscallCounters::Counts SyscallCounters::Between(const Counts& begin, const Counts& end) const {
  Counts d;
  Between(begin, end, d);
  return d;
}

void SyscallCounters::Between(const Counts& begin, const Counts& end, Counts& out) const {
  // Our own closing read() is in our own counts only (Open), never in another process's (OpenProcess).
  const int64_t own = grouped_ ? 1 : 0;
  out.total = end.total - begin.total - own;
  out.by_kind.resize(end.by_kind.size());
  for (size_t i = 0; i < out.by_kind.size(); ++i) {
    const int64_t before = i < begin.by_kind.size() ? begin.by_kind[i] : 0;
    out.by_kind[i] = end.by_kind[i] - before - (static_cast<int>(i) == read_index_ ? own : 0);
  }
}

void SetPerfEventOpenForTesting(PerfEventOpenFn fn) {
  g_open.store(fn != nullptr ? fn : &RealPerfEventOpen);
  g_tracepoint_id.store(0);
  for (size_t i = 0; i < kNumEvents; ++i) {
    g_probes[i].store(Pack({Outcome::kUnknown, 0}));
    g_reported[i].store(false);
  }
}

namespace internal {

std::string_view UnavailableReason(const absl::Status& status) {
  if (!absl::IsUnavailable(status)) return {};
  const std::string_view message(status.message().data(), status.message().size());
  const std::string_view infix = kUnavailableInfix;
  const size_t at = message.find(infix);
  return at == std::string_view::npos ? std::string_view() : message.substr(at + infix.size());
}

}  // namespace internal

}  // namespace backendlab::profiling
