// A backend weight profile (--backend-profile=FILE): what a mock backend
// does on top of its modelled structures so that it weighs what a real
// PostgreSQL backend weighs on the same machine — with physical work only:
// pages touched, a file read, system calls of the kinds the real one makes,
// CPU spent, libraries loaded and an exit that runs their destructors.
// `backendlab calibrate` fits one to a real server on this host. The file
// fixes pages, bytes, system calls and the exit path everywhere; its CPU is
// microseconds, turned into loop turns by a speed measured at each run's
// start, and its libraries are this host's paths: on another host, or under
// other load, the same file is not the same work.
#ifndef BACKENDLAB_LIFECYCLE_BACKEND_WEIGHT_H_
#define BACKENDLAB_LIFECYCLE_BACKEND_WEIGHT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/names.h"
#include "nlohmann/json.hpp"

namespace backendlab::lifecycle {

// The system calls a weight can make, each with harmless arguments, one
// call each (lifecycle/internal/weight_work.h says which).
inline constexpr std::string_view kWeightSyscalls[] = {
    "openat", "close", "read", "lseek", "fstat", "newfstatat", "mmap", "munmap", "mprotect", "brk",
    "rt_sigprocmask", "rt_sigaction", "getpid", "getrandom", "write",
};

// Work in one phase of a backend.
struct PhaseWeight {
  // Private anonymous pages written once each: a first-touch page fault
  // per page, kept until the backend exits (its teardown frees them).
  int64_t touch_pages = 0;
  // Bytes read from a file of that size, in 8 kB reads, as a backend reads
  // its relcache init files (pg_internal.init).
  int64_t read_file_bytes = 0;
  // Extra system calls by kind (kWeightSyscalls), the counts a real backend
  // makes that the mock does not.
  std::map<std::string, int64_t> syscalls;
  // CPU spent in a loop calibrated on this machine at the start of the run.
  double cpu_us = 0;

  bool empty() const { return touch_pages == 0 && read_file_bytes == 0 && syscalls.empty() && cpu_us == 0; }
};

enum class ExitPath { kUnderscoreExit, kExit };
inline constexpr NamedValue<ExitPath> kExitPathNames[] = {{ExitPath::kUnderscoreExit, "_exit"}, {ExitPath::kExit, "exit"}};

struct BackendWeight {
  // The postmaster's own weight, made once before any fork: every backend
  // inherits it, and every fork copies its page tables (PostgreSQL's
  // postmaster holds its settings, caches and libraries so).
  int64_t postmaster_touch_pages = 0;
  // Shared libraries the postmaster loads (dlopen) before any fork, as a
  // real server is linked with them: mapped in every backend, their
  // destructors run by an `exit` exit path.
  std::vector<std::string> libraries;
  // Bytes the postmaster draws from OpenSSL's RAND_bytes before each fork
  // (PostgreSQL's pg_strong_random for the cancel key), which also brings
  // OpenSSL's state into every backend; needs libcrypto in `libraries`.
  int64_t random_bytes_per_fork = 0;
  PhaseWeight startup;  // phase init_other: the rest of a real backend's start-up
  PhaseWeight work;     // at the end of work
  PhaseWeight exit;     // at the end of teardown
  // How the backend ends: `_exit` (the mock's own way) or libc's `exit`,
  // which runs the atexit handlers and every loaded library's destructors,
  // as a PostgreSQL backend's proc_exit does.
  ExitPath exit_path = ExitPath::kUnderscoreExit;
  // What calibrate measured and fitted, kept as it is (provenance).
  nlohmann::json fitted = nlohmann::json::object();

  bool empty() const {
    return postmaster_touch_pages == 0 && libraries.empty() && random_bytes_per_fork == 0 && startup.empty() &&
           work.empty() && exit.empty() && exit_path == ExitPath::kUnderscoreExit;
  }
};

// The file's format, strictly: an unknown key, a value of the wrong type, a
// negative or absurd value, or a system call kind the weight cannot make is
// InvalidArgument naming the key ("backend profile: startup.touch_pages:
// -3 is negative").
absl::StatusOr<BackendWeight> ParseBackendWeight(std::string_view json_text);
absl::StatusOr<BackendWeight> LoadBackendWeight(const std::string& path);
// The same format, keys in a fixed order: Parse(ToJson(w)) == w.
nlohmann::json BackendWeightToJson(const BackendWeight& weight);

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_BACKEND_WEIGHT_H_
