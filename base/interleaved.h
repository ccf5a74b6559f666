// Interleaved rounds: every configuration measured once per round, round
// robin, so that drift on a shared, noisy machine hits all of them alike. The
// one loop of every experiment, and the place where it stops on ^C.
#ifndef BACKENDLAB_BASE_INTERLEAVED_H_
#define BACKENDLAB_BASE_INTERLEAVED_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "base/interrupt.h"

namespace backendlab {

// The status of a loop that saw a stop request: Cancelled, naming the signal.
inline absl::Status StoppedStatus() {
  return absl::CancelledError("interrupted by signal " + std::to_string(StopSignal()));
}

// Calls measure(index, round) for every configuration index in [0, configs)
// in each of `rounds` rounds, each round starting one further along, then
// after_round(round). Shows "name: round i/n" on stderr while it runs if
// stderr is a terminal. Stops at the first error and returns it; returns
// StoppedStatus() as soon as a stop is requested (checked before every
// measurement, so a stop waits for one measurement at most).
template <typename Measure, typename AfterRound>
absl::Status RunInterleaved(std::string_view name, int64_t rounds, size_t configs, Measure measure,
                            AfterRound after_round) {
  const bool progress = isatty(STDERR_FILENO);
  const std::string label(name);
  absl::Status status;
  for (int64_t round = 0; round < rounds && status.ok(); ++round) {
    if (progress) {
      std::fprintf(stderr, "\r%s: round %lld/%lld ", label.c_str(), static_cast<long long>(round + 1),
                   static_cast<long long>(rounds));
    }
    for (size_t i = 0; i < configs && status.ok(); ++i) {
      if (StopRequested()) status = StoppedStatus();
      if (status.ok()) status = measure((i + static_cast<size_t>(round)) % configs, round);
    }
    if (status.ok() && StopRequested()) status = StoppedStatus();
    if (status.ok()) status = after_round(round);
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  return status;
}

template <typename Measure>
absl::Status RunInterleaved(std::string_view name, int64_t rounds, size_t configs, Measure measure) {
  return RunInterleaved(name, rounds, configs, measure, [](int64_t) { return absl::OkStatus(); });
}

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_INTERLEAVED_H_
