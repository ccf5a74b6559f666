// The groups a connection's server CPU is compared in, mock against real,
// and which phase of each is in which: one table per harness, a row per
// phase in its enum's order, so that a phase added to either enum does not
// compile until its row says its group (PostgreSQL's proctypelist.h keeps
// its process types the same way: one list, nothing spelled twice).
#ifndef BACKENDLAB_CALIBRATE_PHASE_GROUPS_H_
#define BACKENDLAB_CALIBRATE_PHASE_GROUPS_H_

#include <cstddef>
#include <optional>

#include "base/names.h"
#include "lifecycle/backend_record.h"
#include "pgreal/phase_rules.h"

namespace backendlab::calibrate {

enum class Group { kStartup, kWork, kExit, kKernelTeardown };
inline constexpr NamedValue<Group> kGroupNames[] = {
    {Group::kStartup, "startup"}, {Group::kWork, "work"}, {Group::kExit, "exit"}, {Group::kKernelTeardown, "kernel_teardown"}};
inline constexpr auto kAllGroups = ValuesOf(kGroupNames);
inline constexpr size_t kNumGroups = std::size(kGroupNames);

// A real server's phases (pgreal/phase_rules.h). What has no group (a real
// postmaster's other work, auxiliary processes, unclaimed samples) is in
// the totals only. `tls` and `scram` are a TCP connection's set-up: a
// Unix-socket trust connection, which calibrate measures, has none.
struct RealPhaseGroup {
  pgreal::RealPhase phase;
  std::optional<Group> group;
};
inline constexpr RealPhaseGroup kRealPhaseGroups[] = {
    {pgreal::RealPhase::kAccept, Group::kStartup},
    {pgreal::RealPhase::kFork, Group::kStartup},
    {pgreal::RealPhase::kStartup, Group::kStartup},
    {pgreal::RealPhase::kTls, Group::kStartup},
    {pgreal::RealPhase::kAuth, Group::kStartup},
    {pgreal::RealPhase::kScram, Group::kStartup},
    {pgreal::RealPhase::kInit, Group::kStartup},
    {pgreal::RealPhase::kWork, Group::kWork},
    {pgreal::RealPhase::kExit, Group::kExit},  // proc_exit and libc's exit handlers
    {pgreal::RealPhase::kKernelExit, Group::kKernelTeardown},
    {pgreal::RealPhase::kReap, Group::kKernelTeardown},
    {pgreal::RealPhase::kPostmasterOther, std::nullopt},
    {pgreal::RealPhase::kAux, std::nullopt},
};

// The mock's phases (lifecycle/backend_record.h); its postmaster's own
// work is in the totals only.
struct MockPhaseGroup {
  lifecycle::Phase phase;
  Group group;
};
inline constexpr MockPhaseGroup kMockPhaseGroups[] = {
    {lifecycle::Phase::kFork, Group::kStartup},
    {lifecycle::Phase::kInitBuffers, Group::kStartup},
    {lifecycle::Phase::kInitCatcache, Group::kStartup},
    {lifecycle::Phase::kInitOther, Group::kStartup},
    {lifecycle::Phase::kWork, Group::kWork},
    // libc's exit handlers and the libraries' destructors included, with an `exit` exit path.
    {lifecycle::Phase::kExitCheck, Group::kExit},
    {lifecycle::Phase::kTeardown, Group::kExit},
    {lifecycle::Phase::kReap, Group::kKernelTeardown},
};

template <typename Row, size_t N>
constexpr bool EveryPhaseInOrder(const Row (&rows)[N], size_t phases) {
  if (N != phases) return false;
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(rows[i].phase) != i) return false;
  }
  return true;
}
static_assert(EveryPhaseInOrder(kRealPhaseGroups, pgreal::kNumRealPhases),
              "kRealPhaseGroups has a row for every RealPhase, in enum order: a new phase needs its group");
static_assert(EveryPhaseInOrder(kMockPhaseGroups, lifecycle::kNumPhases),
              "kMockPhaseGroups has a row for every mock Phase, in enum order: a new phase needs its group");

inline std::optional<Group> GroupOf(pgreal::RealPhase phase) { return kRealPhaseGroups[static_cast<size_t>(phase)].group; }
inline Group GroupOf(lifecycle::Phase phase) { return kMockPhaseGroups[static_cast<size_t>(phase)].group; }

}  // namespace backendlab::calibrate

#endif  // BACKENDLAB_CALIBRATE_PHASE_GROUPS_H_
