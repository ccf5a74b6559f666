// The tracker names: the one place they are spelled for parsing and printing.
#include "xlog/last_important.h"

namespace backendlab::xlog {

std::string_view TrackerName(Tracker tracker) { return NameOf(tracker, kTrackerNames); }

absl::StatusOr<Tracker> ParseTracker(std::string_view name) { return ParseName(name, kTrackerNames, "variant"); }

}  // namespace backendlab::xlog
