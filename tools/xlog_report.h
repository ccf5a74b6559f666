// What `backendlab xlog` prints and writes: the measured table, its notes,
// and the contention model's table, labelled a model. Formats
// xlog/xlog_experiment.h's result; computes nothing.
#ifndef BACKENDLAB_TOOLS_XLOG_REPORT_H_
#define BACKENDLAB_TOOLS_XLOG_REPORT_H_

#include <ostream>
#include <vector>

#include "nlohmann/json.hpp"
#include "tools/report.h"
#include "xlog/xlog_experiment.h"

namespace backendlab::tools {

// One row per configuration: records/s with its spread, insert latency,
// the reader's cost, waits, and the paired ratios to per-lock and to the
// reader off.
Report XlogRowsTable(const std::vector<xlog::XlogRow>& rows);

// How to read the measured table.
void PrintXlogNotes(const xlog::XlogExperimentResult& result, std::ostream& out);

// The contention model: its inputs and table printed to `out` (or why
// there is none), and the same as the JSON header's "model".
nlohmann::json PrintXlogModel(const xlog::XlogExperimentResult& result, const xlog::XlogExperimentOptions& options,
                              std::ostream& out);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_XLOG_REPORT_H_
