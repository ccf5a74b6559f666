// Interleaved rounds: every configuration measured once per round, in an
// order shuffled afresh each round (seeded, so a run can be repeated), so
// that drift on a shared, noisy machine reaches every configuration in every
// round, and neither a configuration's place in the round nor the one before
// it is the same every time (a rotation by one always puts B after A). The
// one loop of every experiment, and the place where it stops on ^C.
#ifndef BACKENDLAB_BASE_INTERLEAVED_H_
#define BACKENDLAB_BASE_INTERLEAVED_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/interrupt.h"
#include "base/private_dir.h"
#include "base/statistics.h"

namespace backendlab {

// What a loop returns when a stop was asked for (^C, SIGTERM, ...): main()
// turns it into exit 128 + the signal.
inline absl::Status StoppedStatus() { return absl::CancelledError("interrupted: stopped early, every child reaped"); }

// The order seed of a run that names none: every run repeats the same
// orders unless asked otherwise (--seed), and prints the seed it used.
inline constexpr uint64_t kDefaultOrderSeed = 1;

// How many rounds, and the orders within them.
struct RoundPlan {
  RoundPlan(int64_t max_rounds) : rounds(max_rounds) {}  // NOLINT: a count of rounds is a plan
  RoundPlan(int64_t max_rounds, uint64_t order_seed, std::vector<size_t> config_groups = {})
      : rounds(max_rounds), seed(order_seed), groups(std::move(config_groups)) {}
  int64_t rounds;                    // at most; after_round may end them sooner
  uint64_t seed = kDefaultOrderSeed;
  // Configuration i's group (empty: one group of all). The configurations
  // that are compared with each other form a group: each runs as a block,
  // so that the runs a paired ratio divides are at most a block apart, not
  // a whole round (drift over seconds is what pairing cannot cancel).
  std::vector<size_t> groups;
};

// Round `round`'s order of `configs` configurations under `seed`: the
// groups in a shuffled order, each one's configurations together, shuffled
// within it. Fisher-Yates shuffles of our own over std::mt19937_64 (whose
// sequence the standard fixes; std::shuffle's use of it is the library's),
// so that a seed gives the same orders with every compiler.
inline std::vector<size_t> RoundOrder(uint64_t seed, int64_t round, size_t configs,
                                      const std::vector<size_t>& groups = {}) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(round));
  auto shuffle = [&](std::vector<size_t>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
  };
  std::vector<size_t> group_ids;
  for (size_t i = 0; i < configs; ++i) {
    const size_t g = i < groups.size() ? groups[i] : 0;
    if (std::find(group_ids.begin(), group_ids.end(), g) == group_ids.end()) group_ids.push_back(g);
  }
  shuffle(group_ids);
  std::vector<size_t> order;
  for (const size_t g : group_ids) {
    std::vector<size_t> members;
    for (size_t i = 0; i < configs; ++i) {
      if ((i < groups.size() ? groups[i] : 0) == g) members.push_back(i);
    }
    shuffle(members);
    order.insert(order.end(), members.begin(), members.end());
  }
  return order;
}

// Calls measure(index, round) for every configuration index in [0, configs)
// in each round, in RoundOrder, then after_round(round), which returns a
// Status, or a StatusOr<bool>: false when no further round is wanted (the
// answer is precise enough, or time is up). Shows "name: round i/n, run k"
// on stderr while it runs if stderr is a terminal, and the clean-up
// watchdog running throughout (WatchdogHold). With `active`, only the
// configurations it marks are measured (the others have left the rounds;
// the order of those left stays the shuffled one). Stops at the first error
// and returns it, and before the next run once a stop was asked for
// (StopRequested(): never reset, so a signal that arrived during a run,
// after its own loop had looked, still ends the matrix): StoppedStatus().
template <typename Measure, typename AfterRound>
absl::Status RunInterleaved(std::string_view name, const RoundPlan& plan, size_t configs, Measure measure,
                            AfterRound after_round, const std::vector<bool>* active = nullptr) {
  const bool progress = isatty(STDERR_FILENO);
  const std::string label(name);
  // A mock postmaster's socket directory per run: the clean-up watchdog
  // started once, here, not beside every round's server (base/private_dir.h).
  const WatchdogHold watchdog;
  size_t done = 0;
  absl::Status status;
  bool more = true;
  for (int64_t round = 0; round < plan.rounds && more && status.ok(); ++round) {
    for (const size_t i : RoundOrder(plan.seed, round, configs, plan.groups)) {
      if (active != nullptr && !(*active)[i]) continue;
      if (StopRequested()) {
        status = StoppedStatus();
        break;
      }
      if (progress) {
        std::fprintf(stderr, "\r%s: round %lld/%lld, run %zu\033[K", label.c_str(), static_cast<long long>(round + 1),
                     static_cast<long long>(plan.rounds), done + 1);
      }
      status = measure(i, round);
      ++done;
      if (!status.ok()) break;
    }
    if (!status.ok()) break;
    if (StopRequested()) {
      status = StoppedStatus();
      break;
    }
    if constexpr (std::is_same_v<std::invoke_result_t<AfterRound, int64_t>, absl::StatusOr<bool>>) {
      absl::StatusOr<bool> again = after_round(round);
      if (!again.ok()) status = again.status();
      else more = *again;
    } else {
      status = after_round(round);
    }
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  return status;
}

template <typename Measure>
absl::Status RunInterleaved(std::string_view name, const RoundPlan& plan, size_t configs, Measure measure) {
  return RunInterleaved(name, plan, configs, measure, [](int64_t) { return absl::OkStatus(); });
}

// When interleaved rounds may end before their count: once every ratio of
// the run is decided, or before a round that would end past a time.
struct Precision {
  // The relative half-width a ratio's interval must reach, beside its
  // verdict, before it is done; 0: its verdict alone.
  double half_width = 0;
  absl::Duration max_time = absl::InfiniteDuration();  // no round is begun that would end past this
};

// What ended a run: its count of rounds, its time (a round that would have
// ended past max_time was not begun), or its ratios (every one decided, and
// as precise as asked, at a look before the count).
enum class RoundsEnd { kCount, kTime, kDecided };

// How a run under a Precision ended.
struct PreciseRun {
  int64_t rounds = 0;            // rounds run to their end, by the configuration that ran the most
  RoundsEnd ended_by = RoundsEnd::kCount;
  std::vector<int64_t> looks;    // the rounds planned for looks (LookRounds)
  int looks_taken = 0;           // the last one at the run's end where time ended it
  absl::Duration elapsed;        // of the rounds
  absl::Duration statistics;     // of the looks: what deciding cost
};

// RunInterleaved, ended sooner by `precision` and by the run's ratios: after
// each round the run stops if another round, as long as the last one, would
// end past max_time; at each look (LookRounds(plan.rounds)) it asks
// needed(), which returns, per configuration, whether it still needs
// rounds (a ratio of it undecided, or short of the precision): those that
// do not leave the rounds for good, and the run ends when none is left. The
// caller reads every ratio at PerLookConfidence(run.looks), at every look
// and at the end, so that the stop the data chose keeps the coverage
// stated. `run` says how it ended.
template <typename Measure, typename Needed>
absl::Status RunUntilDecided(std::string_view name, const RoundPlan& plan, const Precision& precision, size_t configs,
                             Measure measure, Needed needed, PreciseRun& run) {
  const absl::Time start = absl::Now();
  absl::Time round_start = start;
  run = PreciseRun{};
  run.looks = LookRounds(plan.rounds);
  std::vector<bool> active(configs, true);
  size_t next_look = 0;
  absl::Status status = RunInterleaved(
      name, plan, configs, measure,
      [&](int64_t round) -> absl::StatusOr<bool> {
        const absl::Time now = absl::Now();
        const absl::Duration last = now - round_start;
        round_start = now;
        run.rounds = round + 1;
        if (run.rounds < plan.rounds && now - start + last > precision.max_time) {
          // The end: its statistics are the last look, in place of the next one planned.
          run.ended_by = RoundsEnd::kTime;
          if (next_look < run.looks.size()) ++run.looks_taken;
          return false;
        }
        if (next_look >= run.looks.size() || run.looks[next_look] != run.rounds) return true;
        ++next_look;
        ++run.looks_taken;
        if (run.rounds >= plan.rounds) return false;
        const absl::Time t0 = absl::Now();
        const std::vector<bool> still = needed();
        run.statistics += absl::Now() - t0;
        for (size_t i = 0; i < configs && i < still.size(); ++i) active[i] = active[i] && still[i];
        if (std::any_of(active.begin(), active.end(), [](bool a) { return a; })) return true;
        run.ended_by = RoundsEnd::kDecided;
        return false;
      },
      &active);
  run.elapsed = absl::Now() - start;
  return status;
}

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_INTERLEAVED_H_
