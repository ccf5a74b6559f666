// The experiment of `backendlab compare`: a matrix of mock configurations
// (layout x exit-check x shared_buffers x clients x catcache x syscache),
// each run by RunCycle once per round in interleaved rounds until every
// ratio to the baseline is as precise as asked or time is up, and the
// statistics of their rounds: medians and ratios to the baseline paired
// within rounds, with 95 % intervals and verdicts (base/server_usage.h).
// Servers of another harness (a real PostgreSQL: `--with-pg`) join the same
// rounds as companions, compared with the baseline at their shared_buffers
// and clients; this module knows them only by their rounds.
#ifndef BACKENDLAB_LIFECYCLE_COMPARE_H_
#define BACKENDLAB_LIFECYCLE_COMPARE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/interleaved.h"
#include "base/scheduling.h"
#include "base/server_usage.h"
#include "base/statistics.h"
#include "buffers/exit_check.h"
#include "buffers/refcount_table.h"
#include "buffers/shared_buffers.h"
#include "catcache/bucket_allocator.h"
#include "lifecycle/cycle.h"
#include "lifecycle/cycle_summary.h"

namespace backendlab::lifecycle {

// The dimensions a configuration is named by, in label order: layout,
// exit-check, catcache, syscache (shared_buffers and clients are where a
// configuration runs, not what it is).
inline constexpr size_t kNamedDimensions = 4;

// What to compare. Every list is non-empty and names no entry twice (a
// caller that parses them checks that, in its own words).
struct CompareSpec {
  CycleOptions base;  // connections, warm-up, work: the same for every configuration
  // The process models, each a copy of every configuration (empty: base's
  // mode alone). With more than one, a row of a later mode is compared with
  // the same configuration in the first (`thread hash/always` with `fork
  // hash/always`): what that model saves; the first mode's rows with the
  // baseline, as without modes.
  std::vector<Mode> modes;
  std::vector<buffers::Layout> layouts;
  std::vector<buffers::ExitCheckPolicy> exit_checks;
  std::vector<buffers::SharedBuffers> shared_buffers;
  std::vector<catcache::BucketStrategy> catcaches;
  std::vector<std::string> syscaches;  // catcache::BuiltinProfile names
  // Connections in flight, each a run of every configuration: conn/s at one
  // client and at saturation.
  std::vector<int> clients = {1};
  // Connections held beside each run (CycleOptions::hold), each a run of
  // every configuration: what a configuration costs as more backends live.
  // A row is compared with its baseline at the same hold, and with itself
  // at the first hold (CompareRowStats::cpu_vs_fewest_held).
  std::vector<int64_t> holds = {0};
  // 2 to kNamedDimensions names, layout/exit-check[/catcache[/syscache]];
  // empty: array/always where the matrix has it, else the first
  // configuration's layout/exit-check.
  std::vector<std::string> baseline;
  // A second copy of every configuration that is its own baseline, right
  // after it, labelled "<baseline>#2": an A/A check, whose ratio must come out ~.
  bool aa = false;
};

// A row's key: what makes a configuration of the matrix that row. Its
// label, its JSON identity fields and its baseline (the key with its one
// change undone) derive from it, as pprof's profile/merge.go keys its
// entities and Google Benchmark's BenchmarkName::str() joins its fields.
struct CompareKey {
  Mode mode = Mode::kFork;
  std::array<std::string, kNamedDimensions> names;  // layout, exit-check, catcache, syscache
  // Where it runs: a row is only ever divided by a row at the same place.
  uint64_t shared_buffers_bytes = 0;
  int clients = 1;
  int64_t hold = 0;
  bool aa = false;  // the A/A copy of the baseline

  bool operator==(const CompareKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const CompareKey& k) {
    return H::combine(std::move(h), k.mode, k.names, k.shared_buffers_bytes, k.clients, k.hold, k.aa);
  }
  // Whether its names begin with `names` (a baseline's 2 to 4).
  bool Named(std::span<const std::string> names) const;
};

// What a matrix's labels show: a dimension with more than one entry.
struct CompareShows {
  bool modes = false;
  bool catcaches = false;
  bool syscaches = false;
};

struct CompareConfig {
  CompareKey key;
  CycleOptions options;  // the spec's base, with the key's mode, names and place
  // key.Label: "layout/exit-check", then "/catcache" and "/syscache" where
  // the matrix has more than one of them; "<mode> " first where it has
  // more than one mode; "#2" after an A/A copy.
  std::string label;
  std::vector<double> rates;               // conn/s, one per round
  std::vector<ServerUsage> server_rounds;  // the whole server's usage, one per round
  // The exit check's median wall time, one per round, read off its
  // histogram (base/histogram.h): bucketed, so rounds may agree exactly.
  std::vector<double> exit_check_us;
  std::vector<double> hold_open_ms;        // with a hold: the time to open the held connections, one per round
  std::vector<ProcessMemory> held_memory;  // with a hold: the median held backend's memory, one per round it was read
  CycleResult merged;                      // the records of every round, for the summary
  std::string failure;                     // the first run that did not end cleanly, if any
};

struct CompareMatrix {
  std::vector<CompareConfig> configs;         // shared_buffers-major, then clients, layouts, exit-checks, catcaches, syscaches
  absl::flat_hash_map<CompareKey, size_t> index;  // a key -> its configuration in `configs`
  CompareShows shows;
  std::vector<buffers::SharedBuffers> sizes;  // as listed
  std::vector<int> clients;                   // as listed
  std::vector<int64_t> holds;                 // as listed
  std::vector<Mode> modes;                    // as listed; the first is the baseline's
  std::vector<std::string> baseline;          // 2 to kNamedDimensions names
  std::string baseline_label;                 // "array/always"
};

// Every configuration of `spec`. InvalidArgument: an empty list, more
// clients than a round's connections or the open-file limit allows
// (ValidateCycleOptions), a baseline of the wrong length or not in the matrix.
absl::StatusOr<CompareMatrix> BuildCompareMatrix(const CompareSpec& spec);

// The key of `config`'s baseline: its key with its one change undone — an
// A/A copy against its original; a row of a later mode against its own
// configuration in the first mode; any other row against the
// configuration at the same place whose names are the baseline's (and the
// row's own where the baseline does not name one). None for a row that is
// its own baseline.
std::optional<CompareKey> BaselineKeyOf(const CompareMatrix& matrix, const CompareKey& key);
// The configuration of `key`; null if the matrix has none.
const CompareConfig* Find(const CompareMatrix& matrix, const CompareKey& key);
// The baseline of `config` (BaselineKeyOf): itself for its own baseline;
// null if the matrix lacks it.
const CompareConfig* BaselineOf(const CompareMatrix& matrix, const CompareConfig& config);

// The baseline at `shared_buffers_bytes` and `clients` (and the first
// hold), for a companion.
const CompareConfig* BaselineAt(const CompareMatrix& matrix, uint64_t shared_buffers_bytes, int clients);

// One round's run of configuration `c` added to its rounds.
void AddRound(CompareConfig& c, const CycleResult& round);

// "hash/always at 128MB", and ", 4 clients" where the matrix has more than
// one clients entry, ", hold 1024" where it has more than one hold: a
// configuration's name in messages.
std::string RowName(const CompareMatrix& matrix, const CompareConfig& config);

// A server of another harness, measured in the matrix's rounds: where it
// runs, and its rounds so far.
struct Companion {
  std::string name;  // in messages
  uint64_t shared_buffers_bytes = 0;
  int clients = 1;
  MeasuredRounds rounds;
};

// The companions of a run: how many, one round of companion i, and
// companion i as it stands.
struct Companions {
  size_t count = 0;
  std::function<absl::Status(size_t)> measure;
  std::function<Companion(size_t)> at;
};

struct CompareRunOptions {
  int64_t rounds = 10000;  // at most
  uint64_t seed = kDefaultOrderSeed;
  Precision precision;
  double same_within = 0;  // the `same` band (RatioRule::same_within); 0: none
  // Each configuration's every round a start of its own layout
  // (CycleOptions::start_seed, from `seed`, the configuration and the
  // round): base/start_layout.h's kRandomisedAtStart, drawn afresh.
  bool randomise = false;
  // How the client, the postmasters and their backends are scheduled
  // (base/scheduling.h): the caller holds it around the run, and around
  // the start of the servers beside it (SchedulingHold), so that what they
  // start inherits it.
  Scheduling scheduling = Scheduling::kNormal;
};

// How a run's ratios are read: at the level of one of its looks (every
// interval, at every look and at the end: PerLookConfidence), with its
// `same` band, and held to its precision.
struct CompareReading {
  std::vector<int64_t> looks;  // PreciseRun::looks
  double same_within = 0;
  double precision = 0;        // relative half-width asked of every cost and rate ratio beside its verdict; 0: none
  // Every interval's rule, at `confidence` over the looks (a family held
  // together asks for more).
  RatioRule Rule(double confidence = kConfidence) const {
    return {PerLookConfidence(looks, confidence), same_within};
  }
};

// Every configuration, then every companion, once per round, in blocks of
// one shared_buffers and clients (a ratio divides runs at most a block
// apart), in shuffled orders, until every cost and rate ratio is decided
// (and as precise as asked) or the next round would end past the time
// (base/interleaved.h's RunUntilDecided): at each look, a configuration
// none of whose ratios is undecided, and that is no undecided row's
// baseline, leaves the rounds, so that the time goes to the ratios still
// undecided. A configuration whose run crashed
// backends or lost connections keeps its rounds and records the first
// failure in `failure`: the matrix is finished, and the caller fails after
// reporting. Errors: RunCycle's, a companion's, Cancelled on a stop request.
absl::StatusOr<PreciseRun> RunCompare(CompareMatrix& matrix, const Companions& companions,
                                      const CompareRunOptions& options);

// A row's figures over its rounds.
struct CompareRowStats {
  // The cost (the whole server's CPU per connection) and rate (conn/s at
  // the row's clients) as medians with intervals, and their ratios to the
  // baseline paired within rounds (none for the baseline itself).
  ServerStats server;
  int64_t rounds = 0;  // the rounds it ran: fewer where it left once decided
  bool is_baseline = false;  // the row is its own baseline: its ratios are 1
  // conn/s over the bare fork+exit+wait rate the postmaster measured in the
  // same runs (the baseline's, for a companion); none where not measured.
  std::optional<double> vs_fork_floor;
  // The configuration's own figures (none for a companion): the summary of
  // every round's records, the exit check's wall time against the
  // baseline's, and its share of a backend's CPU, fork (the postmaster's
  // fork() included) to reap, in percent, from means so that the shares add
  // up: what a profile of the loop's server side shows (the 2010
  // connection-overhead thread's 18 %).
  std::optional<CycleSummary> summary;
  std::optional<RatioEstimate> exit_vs_baseline;
  std::optional<double> exit_check_share_percent;
  // Against the same configuration at the same shared_buffers and clients
  // holding the first --hold entry's connections, paired within rounds
  // (none at the first hold, and for a companion); the time to open the
  // held connections and the held backends' memory (medians over the
  // rounds; none without a hold).
  std::optional<RatioEstimate> cpu_vs_fewest_held;
  std::optional<RatioEstimate> rate_vs_fewest_held;
  std::optional<MedianEstimate> hold_open_ms;
  std::optional<ProcessMemory> held_memory;
};

struct CompareStats {
  std::vector<CompareRowStats> mock;        // one per matrix configuration
  std::vector<CompareRowStats> companions;  // one per companion
  int64_t rounds = 0;    // the most any row ran
  RatioRule rule;        // every interval's level and the `same` band
  double precision = 0;  // the relative half-width asked of every ratio; 0: none
  // The cost and rate ratios (to the baseline, to the fewest held) left
  // `~`, each row named by RowName.
  std::vector<UndecidedRatio> undecided;
  // The widest relative half-width of a cost or rate ratio's interval (1
  // while some ratio has none: base/server_usage.h's WorstHalfWidth), and
  // whether every one is within the precision. The exit check's ratio is
  // not held to it: it is one phase, not the whole server.
  double worst_half_width = 0;
  bool precise = false;
  // The A/A check: rows whose cost or rate ratio to the baseline is
  // `faster` or `slower` (RowName) when the run's `aa_ratios` A/A ratios
  // are held to kConfidence together (Bonferroni: each at 1 - 0.05 /
  // aa_ratios over the looks, `aa_confidence` at one look), so that copies
  // that differ by nothing but their rounds' noise fail it in at most 5 %
  // of runs. A row's own 95 % interval, in the table, may exclude 1 in such
  // a run, as one ratio in twenty may.
  std::vector<std::string> aa_failures;
  int aa_ratios = 0;
  double aa_confidence = kConfidence;
  double aa_confidence_per_look = kConfidence;  // a member's level at each of the run's looks
};

// The statistics of every row, computed once, before any reporter runs.
CompareStats ComputeCompareStats(const CompareMatrix& matrix, std::span<const Companion> companions,
                                 const CompareReading& reading);

// Which rows still need rounds (the configurations, then the companions):
// a row with a cost or rate ratio not yet decided, or short of the
// precision, and that ratio's denominator (its baseline, or itself holding
// the fewest). Every row where the run has no ratio at all. What RunCompare
// asks at each look.
std::vector<bool> CompareNeeded(const CompareMatrix& matrix, std::span<const Companion> companions,
                                const CompareReading& reading);

}  // namespace backendlab::lifecycle

#endif  // BACKENDLAB_LIFECYCLE_COMPARE_H_
