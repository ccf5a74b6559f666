// Huge pages for `pg --what-if=huge-pages`: the kernel's pool of
// default-size huge pages (vm.nr_hugepages) grown by what a server needs,
// and put back only while it is still what the run set (a change someone
// else made meanwhile is left, and said): by the reservation's owner when
// the run ends (^C included); by a watchdog process when the run is killed;
// and, should both be killed, by the next run that starts a real server (a
// state file in /run, which a reboot empties as it empties the pool).
#ifndef BACKENDLAB_PGREAL_HUGE_PAGES_H_
#define BACKENDLAB_PGREAL_HUGE_PAGES_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace backendlab::pgreal {

// Where a run that grew vm.nr_hugepages says so: "PID START-TIME OLD NEW",
// made whole or not at all (written unnamed, then linked into place).
inline constexpr char kHugePagesStateFile[] = "/run/backendlab-nr_hugepages";

struct HugePagePool {
  int64_t total = 0;  // HugePages_Total
  int64_t free = 0;   // HugePages_Free, less HugePages_Rsvd: what a new mapping can take
  int64_t page_bytes = 0;
  int64_t memory_available_bytes = 0;  // MemAvailable
};
// /proc/meminfo's figures; Unavailable if it cannot be read.
absl::StatusOr<HugePagePool> ReadHugePagePool();
// vm.nr_hugepages; Unavailable if it cannot be read.
absl::StatusOr<int64_t> ReadNrHugePages();

class HugePageReservation {
 public:
  // Makes `pages` free huge pages available. Enough free already: nothing
  // changed. Otherwise, as root, vm.nr_hugepages grown by the shortfall
  // (the state file written and the watchdog started first). InvalidArgument,
  // nothing changed: not root and too few free; the shortfall would leave
  // less than 1 GiB of MemAvailable; another run, alive, holds the state
  // file; a state file this tool cannot read (named, with how to remove
  // it). FailedPrecondition: the kernel gave fewer than asked (put back).
  static absl::StatusOr<std::unique_ptr<HugePageReservation>> Reserve(int64_t pages);
  HugePageReservation(const HugePageReservation&) = delete;
  HugePageReservation& operator=(const HugePageReservation&) = delete;
  ~HugePageReservation();  // Release(), errors ignored

  // vm.nr_hugepages put back to its old value if it is still the value the
  // reservation set, left as it is otherwise; the state file removed and
  // the watchdog ended. Idempotent; by the reserving process only. An error
  // only when the value could not be read or written.
  absl::Status Release();
  int64_t added() const { return added_; }
  // Once released: one line saying what was done ("" if nothing was added).
  const std::string& released() const { return released_; }
  // The watchdog's pid while the reservation is held, else 0 (for tests).
  pid_t watchdog_pid_for_testing() const { return watchdog_pid_; }

 private:
  HugePageReservation() = default;
  absl::Status Record();

  int64_t old_ = 0;
  int64_t set_ = 0;
  int64_t added_ = 0;
  bool held_ = false;
  pid_t owner_ = 0;
  pid_t watchdog_pid_ = 0;
  int watchdog_fd_ = -1;  // the writing end of the watchdog's pipe
  std::string released_;
};

// At a run's start: the state file of a run that is no more (killed, with
// its watchdog) puts vm.nr_hugepages back if it is still what that run set,
// and goes. A state file this tool cannot read goes if it is empty (a kill
// of an older version as it made the file, before any change) or if
// vm.nr_hugepages is 0 (no change of a run is left in it); otherwise it
// stays and the line says how to remove it. One line saying what was found
// and done; empty when there was nothing to do.
std::string RestoreHugePagesOfEndedRun();

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_HUGE_PAGES_H_
