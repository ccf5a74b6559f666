// What `backendlab calibrate` prints and writes: the side-by-side of the
// real server and the mock (at the size fitted, the size checked and at
// saturation) with the goals' verdicts, each weighing as JSON, and the notes
// under the table. Formats calibrate/calibration.h's result; computes nothing.
#ifndef BACKENDLAB_TOOLS_CALIBRATE_REPORT_H_
#define BACKENDLAB_TOOLS_CALIBRATE_REPORT_H_

#include <ostream>
#include <string>

#include "calibrate/calibration.h"
#include "nlohmann/json.hpp"
#include "tools/report.h"

namespace backendlab::tools {

// One row per figure: real, the mock unweighted and weighed at the fit's
// size, the weighed mock over real paired within the rounds (for shares,
// the difference in points) and the goal's verdict; the same at the check's
// size; then real, mock and their ratio at saturation (totals only: no
// groups, no goal).
Report SideBySide(const calibrate::CalibrationResult& r, int saturation_clients);

nlohmann::json WeighingJson(const calibrate::Weighing& w);

// The profile written to `profile_path`, and how to read the table.
void PrintCalibrateNotes(const calibrate::CalibrationResult& r, const std::string& profile_path, int saturation_clients,
                         std::ostream& out);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_CALIBRATE_REPORT_H_
