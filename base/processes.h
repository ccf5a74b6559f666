// The host's processes as a run that holds many of them sees them: what it
// needs of the host — descriptors, processes, memory — checked before
// anything starts, a process's children, and a held process's memory once
// it runs. The one place `pg --hold` and `cycle --hold` read them.
#ifndef BACKENDLAB_BASE_PROCESSES_H_
#define BACKENDLAB_BASE_PROCESSES_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace backendlab {

// What a held backend may take of the host's memory, for the check before a
// run: PostgreSQL's own memory of an idle connection is under 2 MiB (A.
// Freund, "Measuring the Memory Overhead of a Postgres Connection", 2020;
// docs/sources.md); its page tables, kernel stack and task structures come
// on top. Twice the anchor: an estimate that errs on the side of refusing,
// not a measurement (a run measures it: ProcessMemory).
inline constexpr int64_t kHeldBackendBytes = 4LL << 20;

// The most connections a loop keeps in flight, mock or real: each a backend
// (a real server's max_connections is set above it) and a client socket in
// the tool.
inline constexpr int kMaxClients = 1024;

struct HostNeeds {
  std::string what;         // what asks, for the message: "holding 4096 connections"
  int64_t descriptors = 0;  // open at once in this process
  int64_t processes = 0;    // more than now, of the user `uid`
  uid_t uid = 0;            // whose processes (RLIMIT_NPROC counts a user's)
  int64_t memory_bytes = 0;  // more than now
};

// Raises this process's RLIMIT_NOFILE soft limit to its hard one (children
// started afterwards inherit it), then checks each need against the host:
// descriptors against RLIMIT_NOFILE; processes against RLIMIT_NPROC (less
// the user's processes now; not for root, which it does not bind), what
// kernel.pid_max and kernel.threads-max leave, and a cgroup v2 pids.max;
// memory against MemAvailable. InvalidArgument, one line naming the limit
// and its value, for the first need the host cannot meet.
absl::Status CheckHostLimits(const HostNeeds& needs);

// A process's memory as the kernel accounts it (/proc/PID/smaps_rollup,
// /proc/PID/status), kilobytes: rss counts every resident page it maps,
// shared ones whole; pss shares each among its mappers; private_kb is what
// is its alone (Private_Clean + Private_Dirty: what its exit frees);
// page_tables_kb is VmPTE. None when the files cannot be read.
struct ProcessMemory {
  int64_t rss_kb = 0;
  int64_t pss_kb = 0;
  int64_t private_kb = 0;
  int64_t page_tables_kb = 0;
};
std::optional<ProcessMemory> ReadProcessMemory(pid_t pid);
// The median of `pids`, field by field (each field's median process may
// differ): what one of many alike processes takes. None when there is no
// pid or one's memory cannot be read.
std::optional<ProcessMemory> MedianProcessMemory(std::span<const pid_t> pids);
// The median of several readings (of processes, of rounds), field by
// field; none if there is none.
std::optional<ProcessMemory> MedianMemory(std::span<const ProcessMemory> rounds);

// A process as its /proc/PID/stat has it.
struct ProcessEntry {
  pid_t pid = 0;
  char state = 0;  // 'R', 'S', ..., 'Z' for a zombie
  pid_t ppid = 0;
  pid_t pgrp = 0;
};

// A process's /proc/PID/stat (proc(5)): the one place it is read and
// parsed. Faults are counts; times are clock ticks (sysconf(_SC_CLK_TCK)),
// the children's those of the children it reaped; start_time is in ticks
// since boot, which with the pid names a process no later one can.
struct ProcStat {
  ProcessEntry entry;
  int64_t minor_faults = 0, children_minor_faults = 0;
  int64_t major_faults = 0, children_major_faults = 0;
  int64_t user_ticks = 0, system_ticks = 0;
  int64_t children_user_ticks = 0, children_system_ticks = 0;
  int64_t start_time = 0;
};
// None when the process is gone or its file cannot be read or parsed.
std::optional<ProcStat> ReadProcStat(pid_t pid);
// Every process on the host, one read() of /proc/PID/stat each: thousands
// in a few milliseconds. A process that ends meanwhile is left out.
std::vector<ProcessEntry> ProcessTable();

// The pids whose parent is `pid` (empty if none or unreadable).
std::vector<pid_t> ChildrenOf(pid_t pid);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_PROCESSES_H_
