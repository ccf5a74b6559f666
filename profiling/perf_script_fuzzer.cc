// libFuzzer target: ParsePerfScript on any bytes, the options taken from the
// first byte. An accepted text gives stacks that the folded format carries:
// written with ToText they parse back the same.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "profiling/folded_stacks.h"
#include "profiling/perf_script.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace backendlab::profiling;
  if (size == 0) return 0;
  PerfScriptOptions options;
  options.drop_kernel_frames = (data[0] & 1) != 0;
  options.short_names = (data[0] & 2) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const absl::StatusOr<FoldedStacks> stacks = ParsePerfScript(text, options);
  if (!stacks.ok()) return 0;
  const absl::StatusOr<FoldedStacks> again = FoldedStacks::Parse(stacks->ToText());
  BACKENDLAB_CHECK(again.ok() && *again == *stacks);
  return 0;
}
