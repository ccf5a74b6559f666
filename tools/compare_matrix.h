// The configurations `backendlab compare` runs, from its list flags, its
// baseline, and the table of their figures with ratios to the baseline.
#ifndef BACKENDLAB_TOOLS_COMPARE_MATRIX_H_
#define BACKENDLAB_TOOLS_COMPARE_MATRIX_H_

#include <array>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "buffers/shared_buffers.h"
#include "lifecycle/cycle.h"
#include "pgreal/pg_run.h"
#include "tools/flags.h"
#include "tools/report.h"

namespace backendlab::tools {

// The dimensions a configuration is named by, in label order: layout,
// exit-check, catcache, syscache (shared_buffers is the chart's x axis).
inline constexpr size_t kNamedDimensions = 4;

struct CompareConfig {
  lifecycle::CycleOptions options;
  std::array<std::string, kNamedDimensions> names;  // layout, exit-check, catcache, syscache
  // "layout/exit-check", then "/catcache" and "/syscache" where the matrix
  // has more than one of them.
  std::string label;
  std::vector<double> rates;      // conn/s, one per round
  lifecycle::CycleResult merged;  // the records of every round, for the summary
  std::string failure;            // the first run that did not end cleanly, if any
};

struct CompareMatrix {
  std::vector<CompareConfig> configs;           // shared_buffers-major, then layouts, exit-checks, catcaches, syscaches
  std::vector<buffers::SharedBuffers> sizes;    // as listed
  std::vector<std::string> baseline;            // 2 to 4 names: layout, exit-check[, catcache[, syscache]]
  std::string baseline_label;
};

// From --layouts, --exit-checks, --shared-buffers, --catcaches, --syscaches
// and --baseline, every configuration starting from `base`. Usage errors
// (InvalidArgument): an unknown or repeated entry, a baseline that does not
// name a layout/exit-check[/catcache[/syscache]], or one not in the matrix.
absl::StatusOr<CompareMatrix> BuildCompareMatrix(const Flags& flags, const lifecycle::CycleOptions& base);

// The baseline of `config`: the configuration at the same shared_buffers
// whose names are the baseline's, and `config`'s own where the baseline
// does not name one. Null if there is none.
const CompareConfig* BaselineOf(const CompareMatrix& matrix, const CompareConfig& config);

// One row per configuration, in matrix order: conn/s (median of rounds),
// us/conn, x floor, exit_check/teardown/reap medians, and the ratios
// `conn/s vs base` and `exit vs base` (1 for the baseline itself; empty where
// the baseline's figure is 0).
Report CompareReport(const CompareMatrix& matrix);

// "pg15", "pg15 via pgbouncer:session": a real server's name in compare's
// table and chart.
std::string PgConfigLabel(const pgreal::PgTargetResult& target);

// `compare --with-pg`: a real server's rows after the mock's, one per
// shared_buffers: conn/s, us/conn, x floor (over the fork floor measured by
// the baseline at the same shared_buffers) and conn/s vs base; the mock's
// phase columns stay empty (a real backend's phases are `pg --profile`'s).
void AddPgRows(Report& report, const CompareMatrix& matrix, std::span<const pgreal::PgTargetResult> targets);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_COMPARE_MATRIX_H_
