// Why a test cannot do its check on this machine, said the one way
// tools/test reads: "needs WHAT: why". tools/test prints every skip with its
// reason, and as root on Debian (where CI runs, with everything
// tools/install-deps --test installs) it fails the run if a skip names one of
// kNeedsOnCi: there such a skip would hide a check CI must make.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_SKIP_H_
#define BACKENDLAB_TESTS_TEST_UTIL_SKIP_H_

#include <unistd.h>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace backendlab::test_util {

// What CI's machine has: a skip for want of one of these fails tools/test there.
inline constexpr char kNeedsRoot[] = "root";              // setuid, RLIMIT_NPROC as another user, perf -a
inline constexpr char kNeedsPerf[] = "perf";              // perf record, perf_event_open software events
inline constexpr char kNeedsTracefs[] = "tracefs";        // syscall tracepoints: exact counts by kind
inline constexpr char kNeedsPostgresql[] = "postgresql";  // Debian's PostgreSQL 15 server
inline constexpr char kNeedsPgBouncer[] = "pgbouncer";
inline constexpr char kNeedsChromium[] = "chromium";     // Debian's, driven by tests/browser's Playwright (npm ci)
inline constexpr char kNeedsGo[] = "go";                 // Debian's golang-go: go tool pprof reads the pprof export
// What a machine may lack without anything being wrong with the run.
inline constexpr char kNeedsTwoCpus[] = "two CPUs";       // threads or processes running at once
inline constexpr char kNeedsNetwork[] = "network";        // the npm registry, for fetched servers
inline constexpr char kNeedsPmu[] = "a PMU";              // hardware counters (absent on most VMs)

// Exact system-call counts need the raw_syscalls tracepoints: tracefs
// mounted (tools/test mounts it as root) and the right to open them.
inline const char* SyscallCountsNeed() { return geteuid() == 0 ? kNeedsTracefs : kNeedsRoot; }

// What a refusal of perf record -a (profiling::SystemWideRecordingAvailable)
// needs: perf itself when it is missing, else the right to record every CPU.
inline const char* PerfRecordNeed(const absl::Status& refused) {
  return absl::IsFailedPrecondition(refused) ? kNeedsPerf : kNeedsRoot;
}

}  // namespace backendlab::test_util

// GTEST_SKIP() with the reason in tools/test's words; stream the why after
// it: BACKENDLAB_SKIP(test_util::kNeedsPerf) << "perf is not installed";
#define BACKENDLAB_SKIP(what) GTEST_SKIP() << "needs " << (what) << ": "

#endif  // BACKENDLAB_TESTS_TEST_UTIL_SKIP_H_
