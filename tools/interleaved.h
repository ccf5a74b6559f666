// Interleaved repetitions: every configuration measured once per round, round
// robin, so that drift on a shared, noisy machine hits all of them alike.
#ifndef BACKENDLAB_TOOLS_INTERLEAVED_H_
#define BACKENDLAB_TOOLS_INTERLEAVED_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace backendlab::tools {

// Calls measure(index, repetition) for every configuration index in
// [0, configs) in each of `repetitions` rounds, each round starting one
// further along, then after_round(repetition). Shows "command: repetition
// i/n" on stderr while it runs if stderr is a terminal. Stops at the first
// error and returns it.
template <typename Measure, typename AfterRound>
absl::Status RunInterleaved(std::string_view command, int64_t repetitions, size_t configs, Measure measure,
                            AfterRound after_round) {
  const bool progress = isatty(STDERR_FILENO);
  const std::string name(command);
  absl::Status status;
  for (int64_t rep = 0; rep < repetitions && status.ok(); ++rep) {
    if (progress) {
      std::fprintf(stderr, "\r%s: repetition %lld/%lld ", name.c_str(), static_cast<long long>(rep + 1),
                   static_cast<long long>(repetitions));
    }
    for (size_t i = 0; i < configs && status.ok(); ++i) {
      status = measure((i + static_cast<size_t>(rep)) % configs, rep);
    }
    if (status.ok()) status = after_round(rep);
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  return status;
}

template <typename Measure>
absl::Status RunInterleaved(std::string_view command, int64_t repetitions, size_t configs, Measure measure) {
  return RunInterleaved(command, repetitions, configs, measure, [](int64_t) { return absl::OkStatus(); });
}

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_INTERLEAVED_H_
