// Phase names: the same words in code, CLI, JSON, CSV and docs.
#include "lifecycle/backend_record.h"

#include "absl/strings/str_cat.h"

namespace backendlab::lifecycle {

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kFork: return "fork";
    case Phase::kInitBuffers: return "init_buffers";
    case Phase::kInitCatcache: return "init_catcache";
    case Phase::kWork: return "work";
    case Phase::kExitCheck: return "exit_check";
    case Phase::kTeardown: return "teardown";
    case Phase::kReap: return "reap";
  }
  return "?";
}

std::string SampleTagName(int32_t tag) {
  if (tag >= 0 && tag < kNumPhases) return std::string(PhaseName(static_cast<Phase>(tag)));
  switch (tag) {
    case kSampleTagWait: return "wait";
    case kSampleTagPostmaster: return "postmaster";
    case kSampleTagClient: return "client";
  }
  return absl::StrCat("tag", tag);
}

}  // namespace backendlab::lifecycle
