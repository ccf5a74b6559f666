// perf_event_open on raw_syscalls:sys_enter, with the reasons it can be refused.
#include "profiling/syscall_counter.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace backendlab::profiling {
namespace {

constexpr const char* kIdFiles[] = {
    "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
    "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
};

absl::StatusOr<uint64_t> TracepointId() {
  for (const char* path : kIdFiles) {
    std::ifstream in(path);
    uint64_t id;
    if (in >> id) return id;
  }
  return absl::UnavailableError(
      "syscall counts unavailable: tracefs is not mounted (no raw_syscalls/sys_enter/id under "
      "/sys/kernel/tracing); as root: mount -t tracefs nodev /sys/kernel/tracing");
}

absl::StatusOr<int> OpenFd() {
  absl::StatusOr<uint64_t> id = TracepointId();
  if (!id.ok()) return id.status();
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof attr;
  attr.config = *id;
  attr.disabled = 0;
  attr.exclude_kernel = 0;
  const long fd = syscall(SYS_perf_event_open, &attr, 0 /* this process */, -1 /* any cpu */, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return absl::UnavailableError(absl::StrCat(
        "syscall counts unavailable: perf_event_open(raw_syscalls:sys_enter) failed: ", std::strerror(err),
        err == EACCES || err == EPERM ? " (run as root or lower /proc/sys/kernel/perf_event_paranoid)" : ""));
  }
  return static_cast<int>(fd);
}

}  // namespace

absl::Status SyscallCounter::Availability() {
  static const absl::Status status = [] {
    absl::StatusOr<int> fd = OpenFd();
    if (!fd.ok()) return fd.status();
    close(*fd);
    return absl::OkStatus();
  }();
  return status;
}

absl::StatusOr<SyscallCounter> SyscallCounter::Open() {
  absl::StatusOr<int> fd = OpenFd();
  if (!fd.ok()) return fd.status();
  return SyscallCounter(*fd);
}

SyscallCounter& SyscallCounter::operator=(SyscallCounter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

SyscallCounter::~SyscallCounter() {
  if (fd_ >= 0) close(fd_);
}

int64_t SyscallCounter::Read() const {
  uint64_t count;
  if (fd_ < 0 || read(fd_, &count, sizeof count) != static_cast<ssize_t>(sizeof count)) return -1;
  return static_cast<int64_t>(count);
}

}  // namespace backendlab::profiling
