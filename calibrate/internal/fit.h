// The fit's arithmetic, apart from the runs that feed it: a server's
// figures per connection (Weighing) from the real server's counters and
// profile or from the mock's records, and one step of the fit. Exposed for
// tests (tests/calibrate/fit_test.cc); not for other modules.
#ifndef BACKENDLAB_CALIBRATE_INTERNAL_FIT_H_
#define BACKENDLAB_CALIBRATE_INTERNAL_FIT_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "calibrate/calibration.h"
#include "lifecycle/backend_weight.h"
#include "lifecycle/cycle.h"
#include "pgreal/pg_run.h"
#include "pgreal/server_profile.h"

namespace backendlab::calibrate::internal {

// A real server's phase word (pgreal/phase_rules.h) by its group
// (calibrate/phase_groups.h); nullopt for a phase in none (postmaster_other,
// aux) and for a word that is no phase (unclaimed).
std::optional<Group> GroupOfRealPhase(std::string_view phase);

// Each group's share of the four groups' CPU, from group_cpu_us.
void Shares(Weighing& w);

// The real server's figures per connection it served over `rounds` (warm-ups
// included: its counters ran through them), `kinds` the order of each
// round's syscalls_by_kind; each group's CPU is the server's CPU in the
// share of the profile's samples that the group's phases hold (every group
// 0 without a profile: a run not profiled has its totals alone).
Weighing RealWeighing(std::span<const ServerUsage> rounds, const std::vector<double>& rates,
                      std::span<const std::string> kinds, const pgreal::ServerProfile* profile);

// The mock's, from its rounds' server usage and its backends' phase records
// (`merged`: every round's, lifecycle::MergeRound).
Weighing MockWeighing(const lifecycle::CycleResult& merged, std::span<const ServerUsage> rounds,
                      const std::vector<double>& rates, std::span<const std::string> kinds);

// Where the mock's exit() handlers (measured with the starting profile)
// cost more than the real backend's whole exit plus kExitOvershoot, the
// profile ends backends with _exit and does the real exit's work as exit
// work; returns the weighing the fit starts from.
Weighing ChooseExitPath(const Weighing& real, const Weighing& starting, const Weighing& unweighted,
                        lifecycle::BackendWeight& w, std::vector<std::string>& notes);

// One step of the fit: each knob moved by what is still missing (pages,
// system calls by kind, each group's CPU), never below zero; on the `last`
// step a note says where the mock already has more than the real server.
void Refit(const Weighing& real, const Weighing& mock, lifecycle::BackendWeight& w, std::vector<std::string>& notes,
           bool last);

}  // namespace backendlab::calibrate::internal

#endif  // BACKENDLAB_CALIBRATE_INTERNAL_FIT_H_
