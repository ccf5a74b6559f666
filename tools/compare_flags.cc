// `compare`'s flags: the matrix's lists, the baseline, the rounds, and the
// real servers of --with-pg.
#include "tools/compare_flags.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/scheduling.h"
#include "buffers/exit_check.h"
#include "buffers/refcount_table.h"
#include "buffers/shared_buffers.h"
#include "catcache/bucket_allocator.h"
#include "tools/cycle_flags.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kCompareFlags[] = {
    {"layouts", "array,bytes,hash", "refcount table layouts"},
    {"exit-checks", "always,assert", "exit-check policies"},
    {"kernel", "simd", "how the exit check scans array and bytes: naive (9.0's loop), word or simd"},
    {"shared-buffers", "128MB,1GB,8GB", "shared_buffers sizes"},
    {"catcaches", "palloc0", "catcache bucket strategies"},
    {"syscaches", "pg17", "syscache profiles: pg90, pg17"},
    {"modes", "fork", "process models, each a copy of every configuration: fork, thread, prefork, inproc; a later one's rows against the same configuration in the first"},
    {"pool", "", "prefork rows: the pre-forked backends, at least the largest --hold + --clients (default: --hold + --clients + 1)"},
    {"reap", "any", "fork rows: how the postmaster reaps its backends: any (waitpid(-1) until it returns 0, as PostgreSQL's) or pidfd (each backend's pidfd in an epoll set, wait4 on that pid alone)"},
    {"thread-memory", "fresh", "thread mode: a backend's private memory from fresh mappings (fresh) or from an arena an ended backend gave back (reuse)"},
    {"clients", "1", "connections in flight at once; a list (1,4) measures every configuration at each, conn/s at one client and at saturation (>= 2 x cores)"},
    {"hold", "0", "connections held, idle, beside each run; a list (0,1024) measures every configuration at each, each against itself at the first"},
    {"connections", "10", "measured connections per configuration and round"},
    {"rounds", "10000", "at most this many interleaved rounds (--max-time is what ends most runs that are not decided)"},
    {"same-within", "2%", "a ratio whose whole 95 % interval lies within +-this of 1 is `same` (equivalent by two one-sided tests); between 0 and 50 %"},
    {"precision", "0", "percent: a ratio also needs its 95 % interval within +-this of it before it leaves the rounds (0: its verdict alone)"},
    {"max-time", "100s", "no round is begun that would end past this, decided or not"},
    {"require-decisive", "off", "exit 1 when a cost or rate ratio is still ~ at the end: on or off"},
    {"seed", "1", "seed of the rounds' shuffled orders and of the starts' layouts"},
    {"randomise", "on", "each round's postmaster starts with a stack, heap and mmap offset and a directory name length drawn afresh: on or off"},
    {"scheduling", "realtime", "the client, the postmasters and their backends at SCHED_RR priority 1, ahead of every ordinary process, "
     "so that other load does not set the rates; spin: realtime and every CPU kept from idling by a spinner at SCHED_IDLE besides; "
     "normal: the kernel's default; where realtime is refused the run says so and goes on at normal"},
    {"aa", "off", "also a second copy of the baseline, <baseline>#2, whose ratio to it must come out ~: on or off"},
    {"warmup", "3", "warm-up connections per configuration and round"},
    {"work-pins", "20", "pin+unpin pairs per backend"},
    {"work-lookups", "100", "catcache lookups per backend"},
    {"backend-profile", "", "a backend weight profile (JSON, written by calibrate) for every mock configuration"},
    {"syscalls", "off", "count syscalls per phase: on or off"},
    {"with-pg", "off", "also a real PostgreSQL server per shared_buffers (Debian's 15), measured in the same rounds: on or off"},
    {"via", "", "with --with-pg: also through a pooler, pgbouncer[:session|:transaction][,...] (see pg)"},
    {"baseline", "", "ratios against this layout/exit-check[/catcache[/syscache]] (default: array/always if run, else the first)"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
    {"svg", "", "also draw CPU per connection vs shared_buffers to this SVG file"},
    {"html", "", "also write one self-contained HTML page of the run: the table, the chart, the flame graphs, the timeline (no network needed)"},
    {"profile-connections", "1000", "with --html: after the rounds, each configuration at the largest shared_buffers run once more, so many connections, "
     "with the sampler: the page's flame graph of the baseline, a differential one of each other against it, the baseline's timeline; 0: none"},
};

// The values of list flag `name`, each checked by `parse`, which returns the
// value and stores it; an equal value given twice under another spelling
// (1GB,1024MB) is as much a repeat as the same word twice.
template <typename T>
absl::StatusOr<std::vector<T>> ParseList(const Flags& flags, std::string_view name,
                                         std::function<absl::StatusOr<T>(std::string_view)> parse,
                                         std::function<std::string(const T&)> name_of) {
  absl::StatusOr<std::vector<std::string>> items = flags.GetList(name);
  if (!items.ok()) return items.status();
  std::vector<T> values;
  std::vector<std::string> names;
  for (const std::string& item : *items) {
    absl::StatusOr<T> v = parse(item);
    if (!v.ok()) return v.status();
    const std::string canonical = name_of(*v);
    if (std::find(names.begin(), names.end(), canonical) != names.end()) {
      return absl::InvalidArgumentError(absl::StrCat("flag ", Quoted("--" + std::string(name)), " lists ", Quoted(canonical), " twice"));
    }
    names.push_back(canonical);
    values.push_back(*std::move(v));
  }
  return values;
}

// --baseline: "layout/exit-check[/catcache[/syscache]]", each a known name.
// The matrix's lists and baseline from their flags, on `base`.
absl::StatusOr<lifecycle::CompareSpec> SpecFromFlags(const Flags& flags, const lifecycle::CycleOptions& base, bool aa) {
  lifecycle::CompareSpec spec;
  spec.base = base;
  spec.aa = aa;
  auto layouts = ParseList<buffers::Layout>(flags, "layouts", buffers::ParseLayout,
                                            [](const buffers::Layout& v) { return std::string(buffers::LayoutName(v)); });
  if (!layouts.ok()) return layouts.status();
  spec.layouts = *std::move(layouts);
  auto policies = ParseList<buffers::ExitCheckPolicy>(
      flags, "exit-checks", buffers::ParseExitCheckPolicy,
      [](const buffers::ExitCheckPolicy& v) { return std::string(buffers::ExitCheckPolicyName(v)); });
  if (!policies.ok()) return policies.status();
  spec.exit_checks = *std::move(policies);
  auto sizes = ParseList<buffers::SharedBuffers>(flags, "shared-buffers", buffers::ParseSharedBuffers,
                                                 [](const buffers::SharedBuffers& v) { return buffers::FormatSize(v.bytes); });
  if (!sizes.ok()) return sizes.status();
  spec.shared_buffers = *std::move(sizes);
  auto catcaches = ParseList<catcache::BucketStrategy>(
      flags, "catcaches", catcache::ParseBucketStrategy,
      [](const catcache::BucketStrategy& v) { return std::string(catcache::BucketStrategyName(v)); });
  if (!catcaches.ok()) return catcaches.status();
  spec.catcaches = *std::move(catcaches);
  auto syscaches = ParseList<std::string>(flags, "syscaches", ParseSyscacheName, [](const std::string& v) { return v; });
  if (!syscaches.ok()) return syscaches.status();
  spec.syscaches = *std::move(syscaches);
  absl::StatusOr<std::vector<int64_t>> clients = flags.GetIntList("clients", 1, kMaxClients);
  if (!clients.ok()) return clients.status();
  spec.clients.assign(clients->begin(), clients->end());
  absl::StatusOr<std::vector<int64_t>> holds = flags.GetIntList("hold", 0, lifecycle::kMaxHold);
  if (!holds.ok()) return holds.status();
  spec.holds = *holds;
  auto modes = ParseList<lifecycle::Mode>(flags, "modes", lifecycle::ParseMode,
                                         [](const lifecycle::Mode& v) { return std::string(lifecycle::ModeName(v)); });
  if (!modes.ok()) return modes.status();
  spec.modes = *std::move(modes);
  if (base.thread_memory != lifecycle::ThreadMemory::kFresh &&
      std::find(spec.modes.begin(), spec.modes.end(), lifecycle::Mode::kThread) == spec.modes.end()) {
    return absl::InvalidArgumentError("--thread-memory needs thread in --modes");
  }
  if (base.pool != 0 && std::find(spec.modes.begin(), spec.modes.end(), lifecycle::Mode::kPrefork) == spec.modes.end()) {
    return absl::InvalidArgumentError("--pool needs prefork in --modes");
  }
  if (base.reap != lifecycle::Reap::kAny &&
      std::find(spec.modes.begin(), spec.modes.end(), lifecycle::Mode::kFork) == spec.modes.end()) {
    return absl::InvalidArgumentError("--reap=pidfd needs fork in --modes");
  }
  // Advice the flags can follow, as cycle's (the pool takes up to kMaxPool).
  if (const int64_t most = *std::max_element(spec.holds.begin(), spec.holds.end()) +
                           *std::max_element(spec.clients.begin(), spec.clients.end());
      base.pool != 0 && base.pool < most) {
    return absl::InvalidArgumentError(absl::StrCat("--pool=", base.pool, " is fewer than the largest --hold + --clients (", most,
                                                   "): the held connections would keep the loop waiting; give --pool=",
                                                   most, " or more, or leave it out (default --hold + --clients + 1)"));
  }
  if (flags.Has("baseline")) {
    absl::StatusOr<std::vector<std::string>> baseline = ParseBaseline(flags.Get("baseline"));
    if (!baseline.ok()) return baseline.status();
    spec.baseline = *std::move(baseline);
  }
  return spec;
}

}  // namespace

std::span<const FlagSpec> CompareFlags() { return kCompareFlags; }

absl::StatusOr<CompareRequest> CompareFromFlags(const Flags& flags) {
  CompareRequest request;
  absl::StatusOr<int64_t> rounds = flags.GetInt("rounds", 1, 100'000);
  if (!rounds.ok()) return rounds.status();
  request.run.rounds = *rounds;
  absl::StatusOr<int64_t> per_round = flags.GetInt("connections", 1, 10'000'000);
  if (!per_round.ok()) return per_round.status();
  absl::StatusOr<double> precision_pct = flags.GetNumber("precision", 0, 100);
  if (!precision_pct.ok()) return precision_pct.status();
  request.precision_percent = *precision_pct;
  request.run.precision.half_width = *precision_pct / 100;
  absl::StatusOr<double> same_within = flags.GetPercent("same-within", 0, 50);
  if (!same_within.ok()) return same_within.status();
  request.run.same_within = *same_within;
  absl::StatusOr<bool> require_decisive = flags.GetBool("require-decisive");
  if (!require_decisive.ok()) return require_decisive.status();
  request.require_decisive = *require_decisive;
  absl::StatusOr<absl::Duration> max_time = ParseDuration(flags.Get("max-time"));
  if (!max_time.ok()) return absl::InvalidArgumentError(absl::StrCat("--max-time: ", max_time.status().message()));
  request.run.precision.max_time = *max_time;
  absl::StatusOr<int64_t> seed = flags.GetInt("seed", 0, INT64_MAX);
  if (!seed.ok()) return seed.status();
  request.run.seed = static_cast<uint64_t>(*seed);
  absl::StatusOr<bool> aa = flags.GetBool("aa");
  if (!aa.ok()) return aa.status();
  request.aa = *aa;
  absl::StatusOr<bool> randomise = flags.GetBool("randomise");
  if (!randomise.ok()) return randomise.status();
  request.run.randomise = *randomise;
  absl::StatusOr<Scheduling> scheduling = ParseScheduling(flags.Get("scheduling"));
  if (!scheduling.ok()) return absl::InvalidArgumentError(absl::StrCat("--scheduling: ", scheduling.status().message()));
  request.run.scheduling = *scheduling;
  absl::StatusOr<int64_t> profile_connections = flags.GetInt("profile-connections", 0, 1'000'000);
  if (!profile_connections.ok()) return profile_connections.status();
  if (flags.Given("profile-connections") && !flags.Has("html")) {
    return absl::InvalidArgumentError("--profile-connections goes with --html");
  }
  request.profile_connections = flags.Has("html") ? *profile_connections : 0;
  // The shared flags (mode, work, warm-up) through the cycle parser; the
  // matrix's values are set per configuration.
  absl::StatusOr<lifecycle::CycleOptions> base = CycleOptionsFromFlags(flags, /*with_configuration=*/false);
  if (!base.ok()) return base.status();
  base->connections = *per_round;
  // Before and after each round: the fork floor, over every round. One
  // each: a bare fork costs about what a connection does, and 3 of each
  // made a quarter of a default round's time (4 of its 17 ms here).
  base->baseline_forks = 1;
  request.base = *base;
  absl::StatusOr<lifecycle::CompareSpec> spec = SpecFromFlags(flags, *base, *aa);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<lifecycle::CompareMatrix> matrix = lifecycle::BuildCompareMatrix(*spec);
  if (!matrix.ok()) return matrix.status();
  request.matrix = *std::move(matrix);
  if (request.profile_connections > 0 && !lifecycle::SampledMode(request.matrix.modes.front())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--html profiles the baseline, and a ", std::string(lifecycle::ModeName(request.matrix.modes.front())),
        " backend cannot be sampled: list fork first in --modes, or give --profile-connections=0"));
  }

  absl::StatusOr<bool> with_pg = flags.GetBool("with-pg");
  if (!with_pg.ok()) return with_pg.status();
  if (!*with_pg) {
    if (flags.Has("via")) return absl::InvalidArgumentError("--via goes with --with-pg");
    return request;
  }
  std::vector<int64_t> sizes;
  for (const buffers::SharedBuffers& size : request.matrix.sizes) sizes.push_back(static_cast<int64_t>(size.bytes));
  pgreal::LoopOptions loop;
  loop.connections = base->connections;
  loop.warmup = base->warmup;
  absl::StatusOr<pgreal::PgRunOptions> pg = pgreal::ServersBeside(sizes, request.matrix.clients, loop, *rounds);
  if (!pg.ok()) return pg.status();
  pg->seed = request.run.seed;
  pg->randomise = request.run.randomise;
  pg->scheduling = request.run.scheduling;
  if (flags.Has("via")) {
    absl::StatusOr<std::vector<std::string>> vias = flags.GetList("via");
    if (!vias.ok()) return vias.status();
    absl::StatusOr<std::vector<pgreal::Via>> parsed = pgreal::ParseVias(*vias);
    if (!parsed.ok()) return parsed.status();
    pg->via = *parsed;
  }
  request.pg = *std::move(pg);
  return request;
}

}  // namespace backendlab::tools
