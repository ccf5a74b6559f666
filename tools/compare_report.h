// What `backendlab compare` prints and writes: its table (text, JSON, CSV),
// the notes under it, and its chart. Formats lifecycle/compare.h's
// statistics; computes nothing.
#ifndef BACKENDLAB_TOOLS_COMPARE_REPORT_H_
#define BACKENDLAB_TOOLS_COMPARE_REPORT_H_

#include <ostream>
#include <span>

#include "base/line_chart.h"
#include "lifecycle/compare.h"
#include "pgreal/pg_run.h"
#include "tools/report.h"

namespace backendlab::tools {

// One row per configuration, in matrix order, then one per real server
// (`stats.companions[i]` is `targets[i]`'s): CPU us per connection and
// conn/s (medians over rounds, with intervals), their ratios to the
// baseline (paired, with intervals and verdicts, marked where short of the
// precision), x floor, the exit check's figures, and each round's figures
// for a reader to pair again.
Report CompareReport(const lifecycle::CompareMatrix& matrix, const lifecycle::CompareStats& stats,
                     std::span<const pgreal::PgTargetResult> targets);

// How to read the table, and what the run reached: the lines under it.
void PrintCompareNotes(const lifecycle::CompareMatrix& matrix, const lifecycle::CompareStats& stats, bool aa,
                       std::span<const pgreal::PgTargetResult> targets, std::ostream& out);

// CPU per connection of the whole server against shared_buffers, one line
// per label, the real servers' too: the medians of the table.
LineChart CostChart(const lifecycle::CompareMatrix& matrix, const lifecycle::CompareStats& stats,
                    std::span<const pgreal::PgTargetResult> targets);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_COMPARE_REPORT_H_
