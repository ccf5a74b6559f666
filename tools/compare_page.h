// `compare --html`'s page: the table and chart the command made, and, with
// `profile_connections`, every configuration profiled once more after the
// rounds (lifecycle::ProfileCompareRows), a line each in the text, its
// flame graph or its differential one against the baseline on the page.
#ifndef BACKENDLAB_TOOLS_COMPARE_PAGE_H_
#define BACKENDLAB_TOOLS_COMPARE_PAGE_H_

#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "tools/compare_flags.h"
#include "tools/html_report.h"
#include "tools/report.h"

namespace backendlab::tools {

// Profiles (if asked), prints what they found and the page's path to
// `out`, and writes the page to `path`, `out`'s whole text in it. A stop
// during the profiles writes no page (a page of a part would mislead).
absl::Status WriteComparePage(const CompareRequest& request, const nlohmann::json& header, const Report& report,
                              const std::string& chart, const std::string& path, Transcript& out);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_COMPARE_PAGE_H_
