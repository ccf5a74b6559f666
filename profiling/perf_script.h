// `perf script` output (default fields, recorded with -g) folded into stacks.
#ifndef BACKENDLAB_PROFILING_PERF_SCRIPT_H_
#define BACKENDLAB_PROFILING_PERF_SCRIPT_H_

#include <string_view>

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
// A frame line before any header, or a header without a pid, is
// InvalidArgument naming the line number.
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

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_PERF_SCRIPT_H_
