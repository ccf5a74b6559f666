// The matrix, its rounds and their statistics.
#include "lifecycle/compare.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/row_label.h"
#include "base/start_layout.h"

namespace backendlab::lifecycle {
namespace {

bool InMatrix(const CompareMatrix& m, std::span<const std::string> names) {
  return std::any_of(m.configs.begin(), m.configs.end(), [&](const CompareConfig& c) { return c.key.Named(names); });
}

// "[mode ]layout/exit-check[/catcache][/syscache][#2]".
std::string LabelOf(const CompareKey& k, const CompareShows& shows) {
  return JoinLabel({{"", shows.modes ? std::string(ModeName(k.mode)) : std::string()},
                    {shows.modes ? " " : "", k.names[0]},
                    {"/", k.names[1]},
                    {"/", shows.catcaches ? k.names[2] : std::string()},
                    {"/", shows.syscaches ? k.names[3] : std::string()},
                    {"#", k.aa ? std::string("2") : std::string()}});
}

}  // namespace

bool CompareKey::Named(std::span<const std::string> prefix) const {
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (names[i] != prefix[i]) return false;
  }
  return true;
}

absl::StatusOr<CompareMatrix> BuildCompareMatrix(const CompareSpec& spec) {
  if (spec.layouts.empty() || spec.exit_checks.empty() || spec.shared_buffers.empty() || spec.catcaches.empty() ||
      spec.syscaches.empty() || spec.clients.empty() || spec.holds.empty()) {
    return absl::InvalidArgumentError("every dimension of a comparison needs at least one entry");
  }
  CompareMatrix m;
  m.modes = spec.modes.empty() ? std::vector<Mode>{spec.base.mode} : spec.modes;
  m.sizes = spec.shared_buffers;
  m.clients = spec.clients;
  m.holds = spec.holds;
  {  // the most clients and held against a round's connections and the host's limits
    CycleOptions most = spec.base;
    most.clients = *std::max_element(m.clients.begin(), m.clients.end());
    most.hold = *std::max_element(m.holds.begin(), m.holds.end());
    for (Mode mode : m.modes) {
      most.mode = mode;
      most.thread_memory = mode == Mode::kThread ? spec.base.thread_memory : ThreadMemory::kFresh;
      most.pool = mode == Mode::kPrefork ? spec.base.pool : 0;
      most.reap = mode == Mode::kFork ? spec.base.reap : Reap::kAny;
      if (absl::Status s = ValidateCycleOptions(most); !s.ok()) return s;
    }
  }

  m.shows = {.modes = m.modes.size() > 1, .catcaches = spec.catcaches.size() > 1, .syscaches = spec.syscaches.size() > 1};
  // The named configurations, then a copy of them per place and mode.
  std::vector<CompareConfig> named;
  for (buffers::Layout layout : spec.layouts) {
    for (buffers::ExitCheckPolicy policy : spec.exit_checks) {
      for (catcache::BucketStrategy strategy : spec.catcaches) {
        for (const std::string& syscache : spec.syscaches) {
          CompareConfig c;
          c.options = spec.base;
          BackendConfig& b = c.options.backend;
          b.layout = layout;
          b.exit_check = policy;
          b.catcache = strategy;
          b.syscache = syscache;
          c.key.names = {std::string(buffers::LayoutName(layout)), std::string(buffers::ExitCheckPolicyName(policy)),
                         std::string(catcache::BucketStrategyName(strategy)), syscache};
          named.push_back(std::move(c));
        }
      }
    }
  }
  for (const buffers::SharedBuffers& size : m.sizes) {
    for (int n : m.clients) {
      for (int64_t hold : m.holds) {
        for (Mode mode : m.modes) {
          for (const CompareConfig& proto : named) {
            CompareConfig c = proto;
            c.key.mode = mode;
            c.key.shared_buffers_bytes = size.bytes;
            c.key.clients = n;
            c.key.hold = hold;
            c.options.backend.shared_buffers = size;
            c.options.clients = n;
            c.options.hold = hold;
            c.options.mode = mode;
            c.options.thread_memory = mode == Mode::kThread ? spec.base.thread_memory : ThreadMemory::kFresh;
            c.options.pool = mode == Mode::kPrefork ? spec.base.pool : 0;
            c.options.reap = mode == Mode::kFork ? spec.base.reap : Reap::kAny;
            c.label = LabelOf(c.key, m.shows);
            m.configs.push_back(std::move(c));
          }
        }
      }
    }
  }

  if (!spec.baseline.empty()) {
    if (spec.baseline.size() < 2 || spec.baseline.size() > kNamedDimensions) {
      return absl::InvalidArgumentError(absl::StrCat("a baseline names layout/exit-check[/catcache[/syscache]], not ",
                                                     absl::StrJoin(spec.baseline, "/")));
    }
    if (!InMatrix(m, spec.baseline)) {
      return absl::InvalidArgumentError(absl::StrCat("baseline ", absl::StrJoin(spec.baseline, "/"),
                                                     " is not in the matrix (its layouts, exit checks, catcaches and syscaches)"));
    }
    m.baseline = spec.baseline;
  } else {
    m.baseline = {"array", "always"};  // PostgreSQL 9.0, when the matrix has it
    if (!InMatrix(m, m.baseline)) m.baseline = {m.configs.front().key.names[0], m.configs.front().key.names[1]};
  }
  m.baseline_label = absl::StrCat(m.modes.size() > 1 ? absl::StrCat(std::string(ModeName(m.modes.front())), " ") : "",
                                  absl::StrJoin(m.baseline, "/"));
  if (spec.aa) {
    std::vector<CompareConfig> with_copies;
    for (CompareConfig& c : m.configs) {
      with_copies.push_back(c);
      if (BaselineKeyOf(m, c.key)) continue;  // not its own baseline
      CompareConfig copy = c;
      copy.key.aa = true;
      copy.label = LabelOf(copy.key, m.shows);
      with_copies.push_back(std::move(copy));
    }
    m.configs = std::move(with_copies);
  }
  for (size_t i = 0; i < m.configs.size(); ++i) m.index.emplace(m.configs[i].key, i);
  return m;
}

std::optional<CompareKey> BaselineKeyOf(const CompareMatrix& matrix, const CompareKey& key) {
  CompareKey b = key;
  if (key.aa) {
    b.aa = false;
  } else if (key.mode != matrix.modes.front()) {
    b.mode = matrix.modes.front();
  } else {
    std::copy(matrix.baseline.begin(), matrix.baseline.end(), b.names.begin());
  }
  if (b == key) return std::nullopt;
  return b;
}

const CompareConfig* Find(const CompareMatrix& matrix, const CompareKey& key) {
  const auto found = matrix.index.find(key);
  return found == matrix.index.end() ? nullptr : &matrix.configs[found->second];
}

const CompareConfig* BaselineOf(const CompareMatrix& matrix, const CompareConfig& config) {
  const std::optional<CompareKey> b = BaselineKeyOf(matrix, config.key);
  return b ? Find(matrix, *b) : &config;
}

const CompareConfig* BaselineAt(const CompareMatrix& matrix, uint64_t shared_buffers_bytes, int clients) {
  for (const CompareConfig& c : matrix.configs) {
    const CompareKey& k = c.key;
    if (!k.aa && k.mode == matrix.modes.front() && k.shared_buffers_bytes == shared_buffers_bytes &&
        k.clients == clients && k.hold == matrix.holds.front() && k.Named(matrix.baseline)) {
      return &c;
    }
  }
  return nullptr;
}

void AddRound(CompareConfig& c, const CycleResult& round) {
  const CycleSummary s = Summarize(round);
  c.rates.push_back(s.connections_per_second);
  c.server_rounds.push_back(round.server);
  c.exit_check_us.push_back(s.phases[static_cast<int>(Phase::kExitCheck)].wall_us.median);
  if (round.hold_open_ns >= 0) c.hold_open_ms.push_back(static_cast<double>(round.hold_open_ns) / 1e6);
  if (round.held_memory) c.held_memory.push_back(*round.held_memory);
  MergeRound(round, c.merged);
}

std::string RowName(const CompareMatrix& matrix, const CompareConfig& c) {
  return JoinLabel({{"", c.label},
                    {" at ", buffers::FormatSize(c.key.shared_buffers_bytes)},
                    {", ", matrix.clients.size() > 1 ? ClientsText(c.key.clients) : std::string()},
                    {", hold ", matrix.holds.size() > 1 ? absl::StrCat(c.key.hold) : std::string()}});
}

absl::StatusOr<PreciseRun> RunCompare(CompareMatrix& matrix, const Companions& companions,
                                      const CompareRunOptions& options) {
  // Rows are only ever divided by rows at the same shared_buffers and
  // clients: one block per pair in each round, the companions at them in it
  // too.
  auto block_of = [&](uint64_t bytes, int clients) {
    const size_t size = static_cast<size_t>(std::find_if(matrix.sizes.begin(), matrix.sizes.end(),
                                                         [&](const buffers::SharedBuffers& s) { return s.bytes == bytes; }) -
                                            matrix.sizes.begin());
    const size_t n =
        static_cast<size_t>(std::find(matrix.clients.begin(), matrix.clients.end(), clients) - matrix.clients.begin());
    return size * matrix.clients.size() + n;
  };
  std::vector<size_t> groups;
  for (const CompareConfig& c : matrix.configs) groups.push_back(block_of(c.key.shared_buffers_bytes, c.key.clients));
  for (size_t i = 0; i < companions.count; ++i) {
    const Companion c = companions.at(i);
    groups.push_back(block_of(c.shared_buffers_bytes, c.clients));
  }
  CompareReading reading{LookRounds(options.rounds), options.same_within, options.precision.half_width};
  auto needed = [&] {
    std::vector<Companion> now;
    for (size_t i = 0; i < companions.count; ++i) now.push_back(companions.at(i));
    return CompareNeeded(matrix, now, reading);
  };
  std::vector<CompareConfig>& configs = matrix.configs;
  PreciseRun run;
  const absl::Status status = RunUntilDecided(
      "compare", RoundPlan(options.rounds, options.seed, groups), options.precision, configs.size() + companions.count,
      [&](size_t i, int64_t round) -> absl::Status {
        if (i >= configs.size()) return companions.measure(i - configs.size());
        CompareConfig& c = configs[i];
        if (options.randomise) c.options.start_seed = StartSeed(options.seed, i, round);
        absl::StatusOr<CycleResult> r = RunCycle(c.options);
        if (!r.ok()) return r.status();
        if (absl::Status outcome = RunOutcome(*r, Summarize(*r)); !outcome.ok()) {
          if (absl::IsCancelled(outcome)) return outcome;
          // Crashed backends or failed connections: finish the matrix, then fail.
          if (c.failure.empty()) c.failure = std::string(outcome.message());
        }
        AddRound(c, *r);
        return absl::OkStatus();
      },
      needed, run);
  if (!status.ok()) return status;
  return run;
}

namespace {

// The same configuration (its A/A copy's for a copy) holding the first
// hold's connections: its key with the first hold.
const CompareConfig* FewestHeld(const CompareMatrix& matrix, const CompareConfig& config) {
  CompareKey fewest = config.key;
  fewest.hold = matrix.holds.front();
  return Find(matrix, fewest);
}

// A cost or rate ratio a run decides on: row `row` (a configuration, then
// the companions after them) over row `over`.
struct HeldRatio {
  size_t row;
  size_t over;
  std::string figure;  // its column's key
  std::optional<RatioEstimate> estimate;
};

// The cost and rate of every configuration, then of every companion, alone
// (a configuration that is its own baseline) or against its baseline, and
// every ratio held to a verdict.
struct ServerRows {
  std::vector<ServerStats> mock;
  std::vector<ServerStats> companions;
  // Each configuration's cost and rate against itself holding the fewest
  // (none at the fewest).
  std::vector<std::optional<RatioEstimate>> cpu_vs_fewest_held, rate_vs_fewest_held;
  std::vector<HeldRatio> held;
  double widest = 0;
};

size_t IndexOf(const CompareMatrix& matrix, const CompareConfig* c) { return static_cast<size_t>(c - matrix.configs.data()); }

ServerRows ServerRowsOf(const CompareMatrix& matrix, std::span<const Companion> companions, const RatioRule& rule) {
  ServerRows rows;
  auto hold = [&](size_t row, size_t over, const char* figure, const std::optional<RatioEstimate>& r) {
    if (!r || r->self) return;
    rows.held.push_back({row, over, figure, r});
    rows.widest = std::max(rows.widest, r->has_interval ? r->interval.RelativeHalfWidth(r->ratio) : 1.0);
  };
  // A row against its baseline; the baseline against itself (SelfRatio).
  auto add = [&](size_t index, const MeasuredRounds& row, const CompareConfig* baseline, bool own,
                 std::vector<ServerStats>& to) {
    std::optional<MeasuredRounds> base;
    if (baseline != nullptr && !own) base = MeasuredRounds{baseline->rates, baseline->server_rounds};
    to.push_back(ComputeServerStats(row, own ? &row : base ? &*base : nullptr, rule));
    if (baseline == nullptr || own) return;
    hold(index, IndexOf(matrix, baseline), "connections_per_second_vs_baseline", to.back().rate_vs_baseline);
    hold(index, IndexOf(matrix, baseline), "server_cpu_us_vs_baseline", to.back().cpu_vs_baseline);
  };
  for (size_t i = 0; i < matrix.configs.size(); ++i) {
    const CompareConfig& c = matrix.configs[i];
    const CompareConfig* b = BaselineOf(matrix, c);
    add(i, {c.rates, c.server_rounds}, b, b == &c, rows.mock);
    std::optional<RatioEstimate> cpu, rate;
    if (const CompareConfig* f = FewestHeld(matrix, c); f != nullptr && f != &c) {
      cpu = PairedRatioOfCommonRounds(CpuUsByRound(c.server_rounds), CpuUsByRound(f->server_rounds), Better::kLower, rule);
      rate = PairedRatioOfCommonRounds(c.rates, f->rates, Better::kHigher, rule);
      // Held to a verdict as the ratios to the baseline are: they are what
      // a run with holds compares.
      hold(i, IndexOf(matrix, f), "server_cpu_us_vs_fewest_held", cpu);
      hold(i, IndexOf(matrix, f), "connections_per_second_vs_fewest_held", rate);
    }
    rows.cpu_vs_fewest_held.push_back(cpu);
    rows.rate_vs_fewest_held.push_back(rate);
  }
  for (size_t i = 0; i < companions.size(); ++i) {
    const Companion& t = companions[i];
    add(matrix.configs.size() + i, t.rounds, BaselineAt(matrix, t.shared_buffers_bytes, t.clients), false,
        rows.companions);
  }
  return rows;
}

// Whether a held ratio is done: decided, and within the precision where
// one is asked.
bool Done(const RatioEstimate& r, double precision) {
  if (!Decided(r)) return false;
  return precision <= 0 || (r.has_interval && r.interval.RelativeHalfWidth(r.ratio) <= precision);
}

// The A/A copies' cost and rate ratios to their baselines, every one
// that exists, each held to 1 - (1 - kConfidence) / k of the k there are
// (Bonferroni), over the run's looks: the family is held to kConfidence
// together, so that copies apart by nothing but noise fail the check in at
// most 1 - kConfidence of runs. `same` or `~` passes.
// At kConfidence each, one of 6 (3 sizes x cost and rate) would fall
// outside in up to 26 % of such runs.
void AaCheck(const CompareMatrix& matrix, const CompareReading& reading, CompareStats& stats) {
  struct Pair {
    const CompareConfig* copy;
    std::vector<double> a, b;
    Better better;
  };
  std::vector<Pair> family;
  for (const CompareConfig& c : matrix.configs) {
    const CompareConfig* b = c.key.aa ? BaselineOf(matrix, c) : nullptr;
    if (b == nullptr) continue;
    family.push_back({&c, c.rates, b->rates, Better::kHigher});
    family.push_back({&c, CpuUsByRound(c.server_rounds), CpuUsByRound(b->server_rounds), Better::kLower});
  }
  std::erase_if(family, [](const Pair& p) { return !PairedRatioOfCommonRounds(p.a, p.b, p.better); });
  stats.aa_ratios = static_cast<int>(family.size());
  if (family.empty()) return;
  stats.aa_confidence = 1 - (1 - kConfidence) / static_cast<double>(family.size());
  const RatioRule rule = reading.Rule(stats.aa_confidence);
  stats.aa_confidence_per_look = rule.confidence;
  for (const Pair& p : family) {
    const std::string name = RowName(matrix, *p.copy);
    const std::optional<RatioEstimate> r = PairedRatioOfCommonRounds(p.a, p.b, p.better, rule);
    const bool listed = std::find(stats.aa_failures.begin(), stats.aa_failures.end(), name) != stats.aa_failures.end();
    const bool apart = r->verdict == Verdict::kFaster || r->verdict == Verdict::kSlower;
    if (apart && !listed) stats.aa_failures.push_back(name);
  }
}

std::optional<double> OverFloor(double rate, const CycleSummary& s) {
  if (s.baseline_forks_per_second <= 0) return std::nullopt;
  return rate / s.baseline_forks_per_second;
}

}  // namespace

std::vector<bool> CompareNeeded(const CompareMatrix& matrix, std::span<const Companion> companions,
                                const CompareReading& reading) {
  const ServerRows rows = ServerRowsOf(matrix, companions, reading.Rule());
  std::vector<bool> needed(matrix.configs.size() + companions.size(), rows.held.empty());
  for (const HeldRatio& h : rows.held) {
    if (Done(*h.estimate, reading.precision)) continue;
    needed[h.row] = true;
    needed[h.over] = true;
  }
  return needed;
}

CompareStats ComputeCompareStats(const CompareMatrix& matrix, std::span<const Companion> companions,
                                 const CompareReading& reading) {
  CompareStats stats;
  stats.rule = reading.Rule();
  ServerRows rows = ServerRowsOf(matrix, companions, stats.rule);
  stats.precision = reading.precision;
  for (const CompareConfig& c : matrix.configs) stats.rounds = std::max(stats.rounds, static_cast<int64_t>(c.rates.size()));
  for (const Companion& t : companions) stats.rounds = std::max(stats.rounds, static_cast<int64_t>(t.rounds.rates.size()));
  stats.worst_half_width = rows.widest;
  stats.precise = reading.precision <= 0 || rows.widest <= reading.precision;
  for (const HeldRatio& h : rows.held) {
    if (Decided(*h.estimate)) continue;
    const std::string row = h.row < matrix.configs.size() ? RowName(matrix, matrix.configs[h.row])
                                                          : companions[h.row - matrix.configs.size()].name;
    stats.undecided.push_back({row, h.figure, *h.estimate});
  }
  for (size_t i = 0; i < matrix.configs.size(); ++i) {
    const CompareConfig& c = matrix.configs[i];
    const CompareConfig* b = BaselineOf(matrix, c);
    CompareRowStats r;
    r.server = std::move(rows.mock[i]);
    r.rounds = static_cast<int64_t>(c.rates.size());
    r.is_baseline = b == &c;
    r.summary = Summarize(c.merged);
    r.vs_fork_floor = OverFloor(r.server.rate.median, *r.summary);
    if (b != nullptr && !r.is_baseline) {
      r.exit_vs_baseline = PairedRatioOfCommonRounds(c.exit_check_us, b->exit_check_us, Better::kLower, stats.rule);
    }
    double all = 0;
    for (const PhaseHistograms& p : c.merged.backends.phases) all += p.cpu_ns.mean();
    const double check = c.merged.backends.phases[static_cast<int>(Phase::kExitCheck)].cpu_ns.mean();
    if (all > 0) r.exit_check_share_percent = 100 * check / all;
    r.cpu_vs_fewest_held = rows.cpu_vs_fewest_held[i];
    r.rate_vs_fewest_held = rows.rate_vs_fewest_held[i];
    if (!c.hold_open_ms.empty()) r.hold_open_ms = MedianWithInterval(c.hold_open_ms);
    if (!c.held_memory.empty() && c.held_memory.size() == c.rates.size()) r.held_memory = MedianMemory(c.held_memory);
    stats.mock.push_back(std::move(r));
  }
  AaCheck(matrix, reading, stats);
  for (size_t i = 0; i < companions.size(); ++i) {
    CompareRowStats r;
    r.server = std::move(rows.companions[i]);
    r.rounds = static_cast<int64_t>(companions[i].rounds.rates.size());
    const CompareConfig* b = BaselineAt(matrix, companions[i].shared_buffers_bytes, companions[i].clients);
    if (b != nullptr) r.vs_fork_floor = OverFloor(r.server.rate.median, Summarize(b->merged));
    stats.companions.push_back(std::move(r));
  }
  return stats;
}

}  // namespace backendlab::lifecycle
