// libFuzzer target: FoldedStacks::Parse on any bytes. An accepted text gives
// stacks whose counts sum to total_samples(), and parse -> ToText -> parse is
// the identity; TopN and Under run on the result.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "profiling/folded_stacks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using backendlab::profiling::FoldedStacks;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<FoldedStacks> stacks = FoldedStacks::Parse(text);
  if (!stacks.ok()) return 0;
  int64_t sum = 0;
  for (const auto& [stack, count] : stacks->stacks()) {
    BACKENDLAB_CHECK(!stack.empty() && count >= 1);
    sum += count;
  }
  BACKENDLAB_CHECK(sum == stacks->total_samples());
  const absl::StatusOr<FoldedStacks> again = FoldedStacks::Parse(stacks->ToText());
  BACKENDLAB_CHECK(again.ok() && *again == *stacks);
  for (const auto& f : stacks->TopN(5)) BACKENDLAB_CHECK(f.self <= f.total && f.total <= sum);
  if (!stacks->stacks().empty()) {
    const std::string& first = stacks->stacks().begin()->first;
    const FoldedStacks under = stacks->Under(first.substr(0, first.find(';')));
    BACKENDLAB_CHECK(under.total_samples() >= 1 && under.total_samples() <= sum);
  }
  return 0;
}
