// Huge pages for `pg --what-if=huge-pages`: the kernel's pool of
// default-size huge pages (vm.nr_hugepages) grown by what a server needs,
// and put back on every path: by the reservation's owner when the run
// ends (^C included), and, for a run that was killed, by the next run at
// its start (a state file in /run, which a reboot empties as it empties the
// pool).
#ifndef BACKENDLAB_PGREAL_HUGE_PAGES_H_
#define BACKENDLAB_PGREAL_HUGE_PAGES_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace backendlab::pgreal {

// Where a run that grew vm.nr_hugepages says so: "PID START-TIME OLD NEW".
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
  // (the state file written first). InvalidArgument, nothing changed: not
  // root and too few free; the shortfall would leave less than 1 GiB of
  // MemAvailable; another run, alive, holds the state file.
  // FailedPrecondition: the kernel gave fewer than asked (put back).
  static absl::StatusOr<std::unique_ptr<HugePageReservation>> Reserve(int64_t pages);
  HugePageReservation(const HugePageReservation&) = delete;
  HugePageReservation& operator=(const HugePageReservation&) = delete;
  ~HugePageReservation();  // Release(), errors ignored

  // vm.nr_hugepages put back to its old value (the pages' users gone first:
  // a pool in use cannot shrink) and the state file removed. Idempotent.
  absl::Status Release();
  int64_t added() const { return added_; }

 private:
  HugePageReservation() = default;
  int64_t old_ = 0;
  int64_t set_ = 0;
  int64_t added_ = 0;
  bool held_ = false;
};

// At a run's start: a state file left by a run that is no more (killed)
// puts vm.nr_hugepages back, if it is still what that run set, and goes.
// One line saying what was done; empty when there was nothing to do.
std::string RestoreHugePagesOfEndedRun();

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_HUGE_PAGES_H_
