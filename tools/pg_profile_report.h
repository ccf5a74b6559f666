// What `backendlab pg --profile` prints and writes from a server profile:
// the phase table (unclaimed always shown), the backends' top functions, and
// folded stacks and flame graphs as `profile` writes them.
#ifndef BACKENDLAB_TOOLS_PG_PROFILE_REPORT_H_
#define BACKENDLAB_TOOLS_PG_PROFILE_REPORT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "pgreal/pg_run.h"
#include "tools/exports_report.h"
#include "tools/html_report.h"
#include "pgreal/server_profile.h"

namespace backendlab::tools {

// Prints each server's profiles (PrintPgProfile, and with both profilers
// PrintPgProfileAgreement), writes their flame graphs under `dir` (perf's
// in a subdirectory per server, "15-128MB/", as before there was a choice;
// the built-in sampler's beside it, "15-128MB-builtin/"), and adds them to
// the JSON header: `profiles` (perf's, as before), `builtin_profiles`, and
// with both `profile_agreement`.
// With `figures`, each row's phases flame graph and each diff are added
// to it (an HTML page's); with `timeline`, the rows' spans (perf's).
absl::Status ReportPgProfiles(const pgreal::PgResult& result, const std::string& dir, int64_t top_n,
                              const ExportRequest& exports, std::ostream& out, nlohmann::json& header,
                              std::vector<HtmlPage::Figure>* figures = nullptr,
                              std::vector<profiling::TraceSpan>* timeline = nullptr);

// The recording line (the profiler, unwinder, rate, seconds, samples kept
// and dropped), the phase table (phase, samples, % of the server's samples,
// every phase and the unclaimed row) and the top-N functions of the
// backends.
void PrintPgProfile(std::ostream& out, const pgreal::ServerProfile& profile, int64_t top_n);

// How many functions two rankings share (profiling::CommonTop).
struct ProfileAgreement {
  int top_5 = 0;
  int top_10 = 0;
  // The two rankings compared, by name, first the most samples.
  std::vector<std::string> builtin_top_10;
  std::vector<std::string> perf_top_10;
};

// The backends' top 10 by self samples of each profiler on user-space frames
// (ServerProfile::user_stacks: perf's kernel time charged to the user frame
// that entered the kernel, as the sampler sees it), one table after the
// other, and how many of the top 5 and top 10 they share.
ProfileAgreement PrintPgProfileAgreement(std::ostream& out, const pgreal::ServerProfile& builtin,
                                         const pgreal::ServerProfile& perf);

// Writes into `dir`: all.folded/.svg (every server sample under its role),
// phases.folded/.svg (under role and "[phase]") and phase-NAME.folded/.svg
// for each phase with samples (unclaimed too), through WriteView; adds each
// file to `written`, and the phases graph's SVG to `phases_svg` if given.
absl::Status WritePgProfile(const std::string& dir, const pgreal::ServerProfile& profile,
                            std::vector<std::string>& written, std::string* phases_svg = nullptr);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PG_PROFILE_REPORT_H_
