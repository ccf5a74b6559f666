// Interleaved rounds: every configuration measured once per round, round
// robin (the order rotated by one each round), so that slow drift on a
// shared, noisy machine reaches every configuration in every round. It does
// not balance carry-over (each configuration always follows the same one)
// or drift within a round. The one loop of every experiment, and the place
// where it stops on ^C.
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

// What a loop returns when a stop was asked for (^C, SIGTERM, ...): main()
// turns it into exit 128 + the signal.
inline absl::Status StoppedStatus() { return absl::CancelledError("interrupted: stopped early, every child reaped"); }

// Calls measure(index, round) for every configuration index in [0, configs)
// in each of `rounds` rounds, each round starting one further along, then
// after_round(round). Shows "name: round i/n, run k/N" on stderr while it
// runs if stderr is a terminal. Stops at the first error and returns it, and
// before the next run once a stop was asked for (StopRequested(): never
// reset, so a signal that arrived during a run, after its own loop had
// looked, still ends the matrix): StoppedStatus().
template <typename Measure, typename AfterRound>
absl::Status RunInterleaved(std::string_view name, int64_t rounds, size_t configs, Measure measure,
                            AfterRound after_round) {
  const bool progress = isatty(STDERR_FILENO);
  const std::string label(name);
  const size_t runs = configs * static_cast<size_t>(rounds);
  size_t done = 0;
  absl::Status status;
  for (int64_t round = 0; round < rounds && status.ok(); ++round) {
    for (size_t i = 0; i < configs && status.ok(); ++i, ++done) {
      if (StopRequested()) {
        status = StoppedStatus();
        break;
      }
      if (progress) {
        std::fprintf(stderr, "\r%s: round %lld/%lld, run %zu/%zu\033[K", label.c_str(), static_cast<long long>(round + 1),
                     static_cast<long long>(rounds), done + 1, runs);
      }
      status = measure((i + static_cast<size_t>(round)) % configs, round);
    }
    if (status.ok()) status = StopRequested() ? StoppedStatus() : after_round(round);
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
