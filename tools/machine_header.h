// The header every report carries: machine, kernel, build.
#ifndef BACKENDLAB_TOOLS_MACHINE_HEADER_H_
#define BACKENDLAB_TOOLS_MACHINE_HEADER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/interleaved.h"
#include "base/names.h"
#include "base/scheduling.h"
#include "nlohmann/json.hpp"

namespace backendlab::tools {

// {"machine": {"cpu_model", "cores", "kernel", "transparent_hugepages"},
//  "build_type", "assert_checking", "version", "commit"}
nlohmann::json MachineHeader();

// The project's version ("0.1.0") and the commit the tool was built from
// (12 hex digits, "-dirty" when a tracked file differed from it; "unknown"
// outside a git checkout); and --version's line: "backendlab 0.1.0
// (commit 0123456789ab, build Release)".
const char* Version();
const char* Commit();
std::string VersionLine();
// One line for the text report: "machine: AMD EPYC, 2 cores, Linux 6.1; build Release".
std::string MachineLine(const nlohmann::json& header);

// Why the rounds of a command that runs them until its ratios are decided
// (compare, pg) ended, for its header: the JSON value of "rounds_ended_by"
// (the key of what ended them), and a line of text: "rounds: every ratio
// decided after 48 rounds (of --rounds=1000), at look 4 of 9",
// "rounds: --max-time ended the rounds after 9 (of --rounds=200)",
// "rounds: --rounds ended the rounds after 3".
inline constexpr NamedValue<RoundsEnd> kRoundsEndNames[] = {
    {RoundsEnd::kCount, "rounds"}, {RoundsEnd::kTime, "max_time"}, {RoundsEnd::kDecided, "decided"}};
inline std::string_view RoundsEndedName(RoundsEnd end) { return NameOf(end, kRoundsEndNames); }
std::string RoundsEndedLine(const PreciseRun& run, int64_t max_rounds);

// What each server start of the run drew afresh (base/start_layout.h's
// kRandomisedAtStart or kRandomisedAtExec), for the header's "randomised"
// (empty when nothing was), and the text's line: "starts: every round's
// postmaster a start of its own, its stack offset, ... drawn afresh"
// (`what` says whose starts), "" when nothing was.
// What the run was scheduled at (base/scheduling.h), for the header:
// "scheduling" ("realtime", "spin" or "normal": what the measured processes
// ran at), "spinners" (the CPUs kept from idling, 0 unless spin was
// granted), and "scheduling_refused" where realtime was asked and refused (why);
// and the text's line: "scheduling: ... SCHED_RR priority 1 ..." or the
// refusal, "" at normal as asked.
void AddSchedulingJson(const SchedulingOutcome& outcome, nlohmann::json& header);
std::string SchedulingLine(const SchedulingOutcome& outcome, std::string_view what);

nlohmann::json RandomisedJson(bool randomised, std::span<const std::string_view> parts);
std::string StartsLine(bool randomised, std::string_view what, std::span<const std::string_view> parts);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_MACHINE_HEADER_H_
