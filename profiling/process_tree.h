// The samples of one process and its descendants out of a system-wide
// `perf script` (with --show-task-events): processes fork and end during the
// recording, so the tree is followed through perf's FORK records.
#ifndef BACKENDLAB_PROFILING_PROCESS_TREE_H_
#define BACKENDLAB_PROFILING_PROCESS_TREE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "profiling/perf_script.h"

namespace backendlab::profiling {

struct ProcessTreeSamples {
  std::vector<PerfScriptSample> samples;  // the tree's, in perf's order
  int64_t other_samples = 0;              // every other process's (and the idle task's)
  int64_t forks = 0;  // FORK records of new processes into the tree, not counting those perf synthesized at start
  int64_t lost_samples = 0;  // what perf's LOST records say it could not keep, of any process
};

// Keeps the samples whose process is `root` or descends from it. The tree is
// built as the text is read, in perf's time order: a FORK record of a new
// process (pid != parent pid; a new thread joins its process) whose parent
// is in the tree puts it in, and any later FORK of the same pid (a reused
// pid) decides again, so a pid reused by an unrelated process after a
// server's child ended is not mistaken for it. EXIT records change nothing:
// a process's last samples may follow its exit record. The records perf
// synthesizes at start (time 0) give the tree that existed then. Errors are
// ForEachPerfScriptRecord's.
absl::StatusOr<ProcessTreeSamples> SamplesOfProcessTree(std::string_view perf_script, int64_t root_pid,
                                                        const PerfScriptOptions& options);

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_PROCESS_TREE_H_
