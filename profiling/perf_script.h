// `perf script` output (default fields, recorded with -g) folded into stacks.
#ifndef BACKENDLAB_PROFILING_PERF_SCRIPT_H_
#define BACKENDLAB_PROFILING_PERF_SCRIPT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "profiling/folded_stacks.h"

namespace backendlab::profiling {

// Reads `perf script` default output: per sample a header line that starts in
// column 0 ("comm  pid/tid  timestamp: period event:" or
// "comm pid [cpu] timestamp: ..."), then indented frame lines
// "\taddr symbol+0xoff (dso)" leaf first, then a blank line. Each sample
// becomes one stack, root first, whose root frame is the comm with spaces
// turned into '_'. "+0x..." offsets are dropped. A frame without a symbol
// ("[unknown]" or none) is named by its dso's file name, "[libc.so.6]", as
// the symbolizer names it, or "[unknown]" without a dso. A sample without
// frame lines counts as a stack of just the comm. Lines starting with '#' (perf's header) are skipped.
// A header's pid may be -1, what perf prints for a record of no task (its
// comm is then ":-1"). A frame line before any header, or a header without a
// pid, is InvalidArgument naming the line number and quoting the line.
//
// With options: drop_kernel_frames removes frames in the kernel (dso
// "[kernel.kallsyms]" or a kernel address), so kernel time is charged to the
// user-space frame that entered the kernel, as the built-in sampler sees it;
// short_names applies ShortFunctionName() so names compare with the sampler's.
struct PerfScriptOptions {
  bool drop_kernel_frames = false;
  bool short_names = false;
};
absl::StatusOr<FoldedStacks> ParsePerfScript(std::string_view text, const PerfScriptOptions& options = {});

// What a caller that fed this reader perf's own output returns when it
// failed: no usage error (the input was perf's, not the user's), Internal,
// saying whose output was not understood and the reader's message.
absl::Status PerfOutputNotUnderstood(const absl::Status& status);

// One sample of `perf script` output, as ParsePerfScript reads it.
struct PerfScriptSample {
  std::string comm;  // spaces turned into '_'
  int64_t pid = -1;
  int64_t tid = -1;  // == pid when the header has no "pid/tid"
  double time = 0;   // seconds, as the header says (perf's clock); 0 without one
  std::vector<std::string> frames;  // root first, the comm not among them
  // How many of the frames, at the leaf end, are the kernel's (0 with
  // drop_kernel_frames): frames[0, size - kernel_frames) are what a
  // user-space sampler would see of the same moment.
  size_t kernel_frames = 0;
};

// A task record of `perf script --show-task-events`:
//   "comm PID/TID TIME: PERF_RECORD_FORK(PID:TID):(PPID:PTID)"
//   "comm PID/TID TIME: PERF_RECORD_EXIT(PID:TID):(PPID:PTID)"
//   "comm PID/TID TIME: PERF_RECORD_COMM[ exec]: NEWCOMM:PID/TID"
// and, with --show-lost-events, what perf could not keep (its ring buffer
// full):
//   "comm PID/TID TIME: PERF_RECORD_LOST lost N" (and _LOST_SAMPLES)
// (the records perf synthesizes for tasks that existed when it started say
// 0/0 and time 0 in the header; the fields in the record are what counts).
struct PerfTaskEvent {
  enum class Kind { kFork, kExit, kComm, kLost };
  Kind kind = Kind::kFork;
  int64_t pid = -1;
  int64_t tid = -1;
  int64_t parent_pid = -1;  // fork and exit
  int64_t parent_tid = -1;
  std::string comm;  // comm: the new name
  int64_t lost = 0;  // lost: how many samples
  double time = 0;   // seconds, as the header says; 0 for the records perf synthesizes at start
};

// Reads `perf script` output as ParsePerfScript does, in the order of the
// text (perf's is time order), calling `on_sample` for each sample and
// `on_task` for each task record (a header line whose event is
// "PERF_RECORD_FORK", "_EXIT", "_COMM", "_LOST" or "_LOST_SAMPLES"; other PERF_RECORD_ lines are
// skipped, never counted as samples). Either callback may be empty. A
// malformed task record is InvalidArgument naming its line.
absl::Status ForEachPerfScriptRecord(std::string_view text, const PerfScriptOptions& options,
                                     const std::function<void(PerfScriptSample&&)>& on_sample,
                                     const std::function<void(const PerfTaskEvent&)>& on_task);

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_PERF_SCRIPT_H_
