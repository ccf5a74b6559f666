// ClockPairNs: the cost of the timing around an operation.
#include "waits/internal/experiment_clock.h"

#include <algorithm>
#include <vector>

#include "base/resource_usage.h"

namespace backendlab::waits::internal {

int64_t ClockPairNs() {
  constexpr int kBatches = 9;
  constexpr int kPairs = 2000;
  std::vector<int64_t> per_pair;
  for (int b = 0; b < kBatches; ++b) {
    int64_t inner = 0;
    for (int i = 0; i < kPairs; ++i) {
      const int64_t start = NowNs();
      inner += NowNs() - start;
    }
    per_pair.push_back(inner / kPairs);
  }
  std::nth_element(per_pair.begin(), per_pair.begin() + kBatches / 2, per_pair.end());
  return per_pair[kBatches / 2];
}

}  // namespace backendlab::waits::internal
