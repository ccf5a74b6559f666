// Following a process tree through perf's FORK records.
#include "profiling/process_tree.h"

#include <utility>

#include "absl/container/flat_hash_map.h"

namespace backendlab::profiling {

absl::StatusOr<ProcessTreeSamples> SamplesOfProcessTree(std::string_view perf_script, int64_t root_pid,
                                                        const PerfScriptOptions& options) {
  ProcessTreeSamples result;
  // pid -> in the tree, for every process a FORK record has named; the root
  // is in whatever the records say of its own creation.
  absl::flat_hash_map<int64_t, bool> in_tree;
  auto is_in = [&](int64_t pid) {
    if (pid == root_pid) return true;
    auto it = in_tree.find(pid);
    return it != in_tree.end() && it->second;
  };
  absl::Status status = ForEachPerfScriptRecord(
      perf_script, options,
      [&](PerfScriptSample&& sample) {
        if (is_in(sample.pid)) {
          result.samples.push_back(std::move(sample));
        } else {
          ++result.other_samples;
        }
      },
      [&](const PerfTaskEvent& event) {
        if (event.kind == PerfTaskEvent::Kind::kLost) result.lost_samples += event.lost;
        if (event.kind != PerfTaskEvent::Kind::kFork || event.pid == event.parent_pid) return;
        const bool child_in = is_in(event.parent_pid);
        if (event.pid != root_pid) in_tree[event.pid] = child_in;
        if (child_in && event.time > 0) ++result.forks;  // not one perf synthesized at start
      });
  if (!status.ok()) return status;
  return result;
}

}  // namespace backendlab::profiling
