// Report header: what machine and build produced the figures, and why the
// rounds ended.
#include "tools/machine_header.h"

#include "absl/strings/str_cat.h"
#include "backendlab_commit.h"  // generated: tools/version.cmake
#include "base/check.h"
#include "base/resource_usage.h"

namespace backendlab::tools {

nlohmann::json MachineHeader() {
  const MachineInfo m = DescribeMachine();
  return {
      {"machine",
       {{"cpu_model", m.cpu_model}, {"cores", m.cores}, {"kernel", m.kernel},
        {"transparent_hugepages", m.transparent_hugepages}}},
      {"build_type", BACKENDLAB_BUILD_TYPE},
      {"assert_checking", kAssertChecking},
      {"version", Version()},
      {"commit", Commit()},
  };
}

const char* Version() { return BACKENDLAB_VERSION; }
const char* Commit() { return BACKENDLAB_COMMIT; }

std::string VersionLine() {
  return absl::StrCat("backendlab ", Version(), " (commit ", Commit(), ", build ", BACKENDLAB_BUILD_TYPE, ")");
}

std::string MachineLine(const nlohmann::json& header) {
  const nlohmann::json& m = header["machine"];
  return absl::StrCat("machine: ", m["cpu_model"].get<std::string>(), ", ", m["cores"].get<int>(), " cores, ",
                      m["kernel"].get<std::string>(), ", THP ", m["transparent_hugepages"].get<std::string>(),
                      "; build ", header["build_type"].get<std::string>());
}

std::string RoundsEndedLine(const PreciseRun& run, int64_t max_rounds) {
  switch (run.ended_by) {
    case RoundsEnd::kDecided:
      return absl::StrCat("rounds: every ratio decided after ", run.rounds, " rounds (of --rounds=", max_rounds,
                          "), at look ", run.looks_taken, " of ", run.looks.size());
    case RoundsEnd::kTime:
      return absl::StrCat("rounds: --max-time ended the rounds after ", run.rounds, " (of --rounds=", max_rounds, ")");
    case RoundsEnd::kCount:
      break;
  }
  return absl::StrCat("rounds: --rounds ended the rounds after ", run.rounds);
}

void AddSchedulingJson(const SchedulingOutcome& outcome, nlohmann::json& header) {
  header["scheduling"] = std::string(SchedulingName(outcome.granted));
  header["spinners"] = outcome.spinners;
  if (!outcome.refused.empty()) header["scheduling_refused"] = outcome.refused;
}

std::string SchedulingLine(const SchedulingOutcome& outcome, std::string_view what) {
  if (outcome.granted != Scheduling::kNormal) {
    std::string line = absl::StrCat("scheduling: ", std::string(what), " at SCHED_RR priority ", kRealtimePriority,
                                    ", ahead of every ordinary process");
    if (outcome.granted == Scheduling::kSpin) {
      absl::StrAppend(&line, "; ", outcome.spinners, " CPU", outcome.spinners == 1 ? "" : "s", " kept from idling by a ",
                      std::string(kSpinnerName), " process each at SCHED_IDLE");
    }
    return absl::StrCat(line, " (--scheduling=normal: the kernel's default)");
  }
  if (!outcome.refused.empty()) {
    return absl::StrCat("scheduling: ", std::string(SchedulingName(outcome.asked)), " refused (", outcome.refused,
                        "; it needs CAP_SYS_NICE or RLIMIT_RTPRIO): the kernel's default, so other load on the machine reaches the rates");
  }
  return "";
}

nlohmann::json RandomisedJson(bool randomised, std::span<const std::string_view> parts) {
  nlohmann::json list = nlohmann::json::array();
  if (randomised) {
    for (std::string_view part : parts) list.push_back(std::string(part));
  }
  return list;
}

std::string StartsLine(bool randomised, std::string_view what, std::span<const std::string_view> parts) {
  if (!randomised) return "";
  // std::string_view, which this abseil's StrCat does not take.
  std::string line = "starts: " + std::string(what) + ", its ";
  for (size_t i = 0; i < parts.size(); ++i) line += (i > 0 ? ", " : "") + std::string(parts[i]);
  return line + " drawn afresh (--randomise=off: none)";
}

}  // namespace backendlab::tools
