// The configurations `backendlab compare` runs, from its list flags, its
// baseline, the statistics of their rounds (medians and paired ratios to the
// baseline, with 95 % intervals and verdicts: base/statistics.h), and the
// table that formats them.
#ifndef BACKENDLAB_TOOLS_COMPARE_MATRIX_H_
#define BACKENDLAB_TOOLS_COMPARE_MATRIX_H_

#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/server_usage.h"
#include "buffers/shared_buffers.h"
#include "lifecycle/cycle.h"
#include "pgreal/pg_run.h"
#include "tools/flags.h"
#include "tools/report.h"

namespace backendlab::tools {

// The dimensions a configuration is named by, in label order: layout,
// exit-check, catcache, syscache (shared_buffers is the chart's x axis, and
// clients a column of its own).
inline constexpr size_t kNamedDimensions = 4;

struct CompareConfig {
  lifecycle::CycleOptions options;
  std::array<std::string, kNamedDimensions> names;  // layout, exit-check, catcache, syscache
  // "layout/exit-check", then "/catcache" and "/syscache" where the matrix
  // has more than one of them.
  std::string label;
  bool aa = false;  // the A/A copy of the baseline (--aa=on): label "<baseline>#2"
  std::vector<double> rates;               // conn/s, one per round
  std::vector<ServerUsage> server_rounds;  // the whole server's usage, one per round
  std::vector<double> exit_check_us;       // the exit check's median wall time, one per round
  lifecycle::CycleResult merged;           // the records of every round, for the summary
  std::string failure;                     // the first run that did not end cleanly, if any
};

struct CompareMatrix {
  std::vector<CompareConfig> configs;           // shared_buffers-major, then clients, layouts, exit-checks, catcaches, syscaches
  std::vector<buffers::SharedBuffers> sizes;    // as listed
  std::vector<int> clients;                     // as listed: conn/s at one client and at saturation
  std::vector<std::string> baseline;            // 2 to 4 names: layout, exit-check[, catcache[, syscache]]
  std::string baseline_label;
};

// One round's run of configuration `c` added to its rounds.
void AddRound(CompareConfig& c, const lifecycle::CycleResult& round);

// From --layouts, --exit-checks, --shared-buffers, --clients, --catcaches,
// --syscaches and --baseline, every configuration starting from `base`.
// Usage errors (InvalidArgument): an unknown or repeated entry, more clients
// than `base`'s connections of a round or than the open-file limit allows, a
// baseline that does not name a layout/exit-check[/catcache[/syscache]], or
// one not in the matrix.
// With `aa`, a second copy of the baseline configuration at every
// shared_buffers, right after it, marked `aa` and labelled "<baseline>#2".
absl::StatusOr<CompareMatrix> BuildCompareMatrix(const Flags& flags, const lifecycle::CycleOptions& base, bool aa = false);

// The baseline of `config`: the configuration at the same shared_buffers
// and clients whose names are the baseline's, and `config`'s own where the baseline
// does not name one (never the A/A copy). Null if there is none.
const CompareConfig* BaselineOf(const CompareMatrix& matrix, const CompareConfig& config);

// A row's figures over its rounds: medians with order-statistic intervals,
// and ratios to its baseline paired within rounds (none for the baseline
// itself, which is 1 by definition).
struct RowStats {
  Estimate cpu_us;  // the whole server's CPU per connection: the cost
  Estimate rate;    // conn/s at the row's clients
  std::optional<Estimate> cpu_vs_baseline;   // lower is faster
  std::optional<Estimate> rate_vs_baseline;  // higher is faster
  std::optional<Estimate> exit_vs_baseline;  // the exit check's wall time; lower is faster
  bool has_cpu = false;                      // the source counted the server's CPU
  bool is_baseline = false;                  // the row is its own baseline: its ratios are 1
};

struct CompareStats {
  std::vector<RowStats> mock;  // one per matrix configuration
  std::vector<RowStats> pg;    // one per real server target
  int64_t rounds = 0;
  // The widest half-width of a cost or rate ratio's interval, relative to
  // the ratio (1 when some ratio has no interval yet), and whether every
  // one is within the precision asked for. The exit-check ratio is not
  // held to it: it is the one figure, not the whole server.
  double worst_half_width = 0;
  bool precise = false;
  // A/A rows whose cost or rate ratio to the baseline is not `~`.
  std::vector<std::string> aa_failures;
};

// The statistics of every row, computed once, before any reporter runs.
// `precision`: the relative half-width asked of every ratio (0.02 = ±2 %;
// 0: none asked, every ratio counts as precise).
CompareStats ComputeCompareStats(const CompareMatrix& matrix, std::span<const pgreal::PgTargetResult> targets,
                                 double precision);

// One row per configuration, in matrix order, then one per real server:
// CPU us per connection and conn/s (medians over rounds, with intervals),
// their ratios to the baseline (paired, with intervals and verdicts), x
// floor, and the exit check's figures. Formats `stats`; computes nothing.
Report CompareReport(const CompareMatrix& matrix, const CompareStats& stats, std::span<const pgreal::PgTargetResult> targets);

// "1 client", "4 clients".
std::string ClientsText(int clients);

// "hash/always at 128MB", and ", 4 clients" where the run has more than one
// clients entry: a row's name in compare's messages.
std::string RowName(const CompareMatrix& matrix, const CompareConfig& config);

// "pg15", "pg15 via pgbouncer:session": a real server's name in compare's
// table and chart.
std::string PgConfigLabel(const pgreal::PgTargetResult& target);

// The mock configuration a real server's row is compared with: the
// baseline at its shared_buffers and clients (null if none).
const CompareConfig* BaselineOfPg(const CompareMatrix& matrix, const pgreal::PgTargetResult& target);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_COMPARE_MATRIX_H_
