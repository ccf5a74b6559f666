// `backendlab catcache`: each bucket strategy x syscache profile measured as a
// backend start (init of every cache, then the first queries), in-process or
// in forked children, in interleaved repetitions, reported as medians; plus
// the zeroing of the same bytes on warm vs fresh pages, which splits palloc0's
// init cost into memset and page faults.
#include "tools/catcache_command.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/compiler.h"
#include "catcache/bucket_allocator.h"
#include "catcache/catcache.h"
#include "catcache/first_queries.h"
#include "catcache/syscache_profile.h"
#include "base/resource_usage.h"
#include "base/summary.h"
#include "tools/flags.h"
#include "tools/interleaved.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

using catcache::BucketStrategy;
using catcache::SyscacheProfile;

constexpr FlagSpec kFlags[] = {
    {"strategies", "palloc0,bss,expansible,mmap", "bucket allocation strategies to compare"},
    {"profiles", "pg90,pg17", "syscache profiles (cache sets and initial bucket counts)"},
    {"lookups", "5000", "first-query lookups per backend after init"},
    {"fork", "false", "measure every backend in a forked child (--fork alone = true)"},
    {"repetitions", "31", "interleaved repetitions; medians are reported"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};

// Where a backend is measured. With --fork, `bss` gets two rows: a parent
// that never touched the region (the child's first writes are zero-fill
// faults) and one that wrote it (copy-on-write faults).
enum class Process { kInproc, kFork, kForkTouchedParent };

std::string_view ProcessName(Process p) {
  switch (p) {
    case Process::kInproc: return "inproc";
    case Process::kFork: return "fork";
    case Process::kForkTouchedParent: return "fork-touched-parent";
  }
  return "?";
}

struct Config {
  BucketStrategy strategy;
  size_t profile;  // index into the profiles
  Process process;
};

// One backend's numbers. Plain data: a forked child writes it to shared memory.
struct Sample {
  double init_us = 0;
  double init_cpu_us = 0;
  double init_faults = 0;
  double queries_us = 0;
  double queries_faults = 0;
  int64_t rehashes = 0;
  double rehash_us = 0;
  int64_t entries = 0;
  int64_t hits = 0;
  int64_t initial_bucket_bytes = 0;
  int64_t bucket_bytes = 0;         // after the first queries
  int64_t context_held_bytes = 0;   // after the first queries
  int64_t memset_bytes_init = 0;
  int64_t kernel_zeroed_bytes_init = 0;
  int64_t bss_fallback_arrays = 0;  // after the first queries
};

// The page a forked backend reports through (MAP_SHARED): nothing is lost if
// the child dies, because the parent reads it only after waitpid.
struct ChildReport {
  int done;
  Sample sample;
  char error[256];
};

// One backend: init every cache (timed), then the first queries (timed).
absl::Status MeasureBackend(BucketStrategy strategy, const SyscacheProfile& profile,
                            const std::vector<catcache::Lookup>& lookups, Sample& s) {
  const ResourceSample r0 = SampleSelf();
  const int64_t t0 = NowNs();
  absl::StatusOr<std::unique_ptr<catcache::CatCacheSet>> set = catcache::CatCacheSet::Create(strategy, profile);
  const int64_t t1 = NowNs();
  const ResourceSample r1 = SampleSelf();
  if (!set.ok()) return set.status();
  const catcache::CatCacheSetStats init = (*set)->Stats();

  const ResourceSample r2 = SampleSelf();
  const int64_t t2 = NowNs();
  absl::StatusOr<catcache::FirstQueriesResult> result = catcache::RunFirstQueries(**set, lookups);
  const int64_t t3 = NowNs();
  const ResourceSample r3 = SampleSelf();
  if (!result.ok()) return result.status();
  const catcache::CatCacheSetStats end = (*set)->Stats();

  s.init_us = static_cast<double>(t1 - t0) / 1e3;
  s.init_cpu_us = static_cast<double>((r1 - r0).cpu_ns) / 1e3;
  s.init_faults = static_cast<double>((r1 - r0).minor_faults);
  s.queries_us = static_cast<double>(t3 - t2) / 1e3;
  s.queries_faults = static_cast<double>((r3 - r2).minor_faults);
  s.rehashes = end.rehashes;
  s.rehash_us = static_cast<double>(end.rehash_ns) / 1e3;
  s.entries = static_cast<int64_t>(end.entries);
  s.hits = result->hits;
  s.initial_bucket_bytes = static_cast<int64_t>(init.bucket_bytes);
  s.bucket_bytes = static_cast<int64_t>(end.bucket_bytes);
  s.context_held_bytes = static_cast<int64_t>(end.context_held_bytes);
  s.memset_bytes_init = static_cast<int64_t>(init.memset_bytes);
  s.kernel_zeroed_bytes_init = static_cast<int64_t>(init.kernel_zeroed_bytes);
  s.bss_fallback_arrays = end.bss_fallback_arrays;
  return absl::OkStatus();
}

// Forks a backend that measures itself and reports through `report`; the
// parent reaps it before returning, whatever happened to it.
absl::Status MeasureInChild(const Config& c, const SyscacheProfile& profile,
                            const std::vector<catcache::Lookup>& lookups, ChildReport* report, Sample& s) {
  // The parent's side of the BSS question: touched (resident, private: the
  // child's writes copy pages) or dropped (the child's writes zero-fill).
  absl::Status prepared =
      c.process == Process::kForkTouchedParent ? catcache::TouchBssRegion() : catcache::DropBssRegion();
  if (!prepared.ok()) return prepared;
  *report = ChildReport{};
  std::fflush(nullptr);  // no buffered output to be written twice
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork failed: ", std::strerror(errno)));
  if (pid == 0) {
    // The child's first clock and getrusage calls, and its first malloc, fault
    // in pages of their own; a real backend has made them long before
    // InitCatCache, so they are made here before anything is timed.
    (void)SampleSelf();
    (void)NowNs();
    std::free(std::malloc(64));
    // The child never returns into the parent's code (nor, under a test, into
    // GoogleTest's exception handler): every way out is _exit.
    try {
      absl::Status st = MeasureBackend(c.strategy, profile, lookups, report->sample);
      if (!st.ok()) {
        const std::string message(st.message());
        std::snprintf(report->error, sizeof(report->error), "%s", message.c_str());
        _exit(1);
      }
    } catch (...) {
      std::snprintf(report->error, sizeof(report->error), "an exception escaped the measurement");
      _exit(1);
    }
    report->done = 1;
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid failed: ", std::strerror(errno)));
  }
  const std::string what = absl::StrCat("the forked backend measuring ", std::string(BucketStrategyName(c.strategy)),
                                        "/", profile.name);
  if (WIFSIGNALED(status)) {
    return absl::InternalError(absl::StrCat(what, " died of signal ", WTERMSIG(status), " (",
                                            strsignal(WTERMSIG(status)), ")"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(what, " failed: ", report->error[0] ? report->error : "no message"));
  }
  if (report->done != 1) return absl::InternalError(absl::StrCat(what, " exited without reporting"));
  s = report->sample;
  return absl::OkStatus();
}

// Zeroing the profile's initial bucket bytes outside any cache: a memset of
// memory already faulted in, and of fresh anonymous pages.
struct ZeroSample {
  double warm_us = 0;
  double fresh_us = 0;
  double fresh_faults = 0;
};

absl::Status MeasureZeroing(std::vector<char>& warm, ZeroSample& z) {
  const size_t bytes = warm.size();
  // The warm memset is a few hundred ns: repeat it so the clock's own cost
  // and resolution do not dominate.
  constexpr int kWarmPasses = 16;
  // One untimed pass first: after a fork the parent's pages are write-protected
  // (copy-on-write) until written again, and "warm" means no fault at all.
  std::memset(warm.data(), 0, bytes);
  CompilerBarrier();
  int64_t t0 = NowNs();
  for (int i = 0; i < kWarmPasses; ++i) {
    std::memset(warm.data(), 0, bytes);
    CompilerBarrier();
  }
  z.warm_us = static_cast<double>(NowNs() - t0) / 1e3 / kWarmPasses;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return absl::InternalError(absl::StrCat("mmap failed: ", std::strerror(errno)));
  const ResourceSample r0 = SampleSelf();
  t0 = NowNs();
  std::memset(p, 0, bytes);
  CompilerBarrier();
  const int64_t t1 = NowNs();
  const ResourceSample r1 = SampleSelf();
  munmap(p, bytes);
  z.fresh_us = static_cast<double>(t1 - t0) / 1e3;
  z.fresh_faults = static_cast<double>((r1 - r0).minor_faults);
  return absl::OkStatus();
}

absl::StatusOr<bool> ParseBool(const std::string& name, const std::string& value) {
  if (value == "true") return true;
  if (value == "false") return false;
  return absl::InvalidArgumentError(absl::StrCat("flag '--", name, "': '", value, "' is not true or false"));
}

}  // namespace

std::string CatcacheUsage() {
  return absl::StrCat(
      "usage: backendlab catcache [flags]\n"
      "Compares where a backend's catalog-cache buckets come from (palloc0, bss,\n"
      "expansible, mmap) for the PostgreSQL 9.0 and 17 syscache sets: init cost with\n"
      "its page faults, the first queries after it (with rehashes), and memory held.\n\n",
      FlagsHelp(kFlags));
}

absl::Status RunCatcacheCommand(std::span<const std::string> raw_args, std::ostream& out) {
  // A bare --fork is a switch; the flag parser wants --name=value.
  std::vector<std::string> args(raw_args.begin(), raw_args.end());
  for (std::string& a : args) {
    if (a == "--fork") a = "--fork=true";
  }
  absl::StatusOr<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::vector<std::string>> strategy_names = flags->GetList("strategies");
  if (!strategy_names.ok()) return strategy_names.status();
  absl::StatusOr<std::vector<std::string>> profile_names = flags->GetList("profiles");
  if (!profile_names.ok()) return profile_names.status();
  absl::StatusOr<int64_t> lookups = flags->GetInt("lookups", 0, 10'000'000);
  if (!lookups.ok()) return lookups.status();
  absl::StatusOr<int64_t> repetitions = flags->GetInt("repetitions", 1, 1000);
  if (!repetitions.ok()) return repetitions.status();
  absl::StatusOr<bool> fork_mode = ParseBool("fork", flags->Get("fork"));
  if (!fork_mode.ok()) return fork_mode.status();

  std::vector<BucketStrategy> strategies;
  for (const std::string& name : *strategy_names) {
    absl::StatusOr<BucketStrategy> s = catcache::ParseBucketStrategy(name);
    if (!s.ok()) return s.status();
    if (std::find(strategies.begin(), strategies.end(), *s) == strategies.end()) strategies.push_back(*s);
  }
  std::vector<SyscacheProfile> profiles;
  for (const std::string& name : *profile_names) {
    absl::StatusOr<SyscacheProfile> p = catcache::BuiltinProfile(name);
    if (!p.ok()) return p.status();
    if (std::none_of(profiles.begin(), profiles.end(), [&](const SyscacheProfile& q) { return q.name == p->name; })) {
      profiles.push_back(*std::move(p));
    }
  }

  std::vector<Config> configs;
  for (size_t p = 0; p < profiles.size(); ++p) {
    for (BucketStrategy s : strategies) {
      configs.push_back({s, p, *fork_mode ? Process::kFork : Process::kInproc});
      if (*fork_mode && s == BucketStrategy::kBss) configs.push_back({s, p, Process::kForkTouchedParent});
    }
  }
  std::vector<std::vector<catcache::Lookup>> queries;
  std::vector<std::vector<char>> warm;
  for (const SyscacheProfile& p : profiles) {
    queries.push_back(catcache::MakeFirstQueries(p, *lookups));
    warm.emplace_back(p.TotalBuckets() * sizeof(catcache::Bucket), 1);
  }

  ChildReport* report = nullptr;
  if (*fork_mode) {
    void* page = mmap(nullptr, sizeof(ChildReport), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return absl::InternalError(absl::StrCat("mmap failed: ", std::strerror(errno)));
    report = static_cast<ChildReport*>(page);
  }
  struct Unmap {
    ChildReport* p;
    ~Unmap() {
      if (p != nullptr) munmap(p, sizeof(ChildReport));
    }
  } unmap{report};

  std::vector<std::vector<Sample>> samples(configs.size());
  std::vector<std::vector<ZeroSample>> zeroing(profiles.size());
  absl::Status measured = RunInterleaved(
      "catcache", *repetitions, configs.size(),
      [&](size_t index, int64_t) {
        const Config& c = configs[index];
        Sample s;
        absl::Status status = c.process == Process::kInproc
                                  ? MeasureBackend(c.strategy, profiles[c.profile], queries[c.profile], s)
                                  : MeasureInChild(c, profiles[c.profile], queries[c.profile], report, s);
        if (status.ok()) samples[index].push_back(s);
        return status;
      },
      [&](int64_t) {
        for (size_t p = 0; p < profiles.size(); ++p) {
          ZeroSample z;
          if (absl::Status status = MeasureZeroing(warm[p], z); !status.ok()) return status;
          zeroing[p].push_back(z);
        }
        return absl::OkStatus();
      });
  if (!measured.ok()) return measured;

  std::vector<Column> columns = {
      {"strategy", "strategy"},
      {"profile", "profile"},
      {"process", "process"},
      {"init_us", "init us", 1},
      {"init_us_p10", ""},
      {"init_us_p90", ""},
      {"init_cpu_us", "init cpu us", 1},
      {"init_minor_faults", "init faults", 0},
      {"queries_us", "queries us", 0},
      {"queries_us_p10", ""},
      {"queries_us_p90", ""},
      {"queries_minor_faults", "q faults", 0},
      {"rehashes", "rehashes"},
      {"rehash_us", "rehash us", 1},
      {"entries", "entries"},
      {"hits", ""},
      {"initial_bucket_bytes", "bucket bytes@init"},
      {"bucket_bytes", "bucket bytes@end"},
      {"context_held_bytes", "held bytes@end"},
      {"memset_bytes_init", "memset bytes"},
      {"kernel_zeroed_bytes_init", "kernel-zeroed bytes"},
      {"bss_fallback_arrays", "bss fallbacks"},
  };
  Report table(columns);
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const std::vector<Sample>& ss = samples[i];
    std::vector<double> init_us, queries_us;
    for (const Sample& s : ss) {
      init_us.push_back(s.init_us);
      queries_us.push_back(s.queries_us);
    }
    const Summary init = Summarize(init_us), queries_summary = Summarize(queries_us);
    // Counts are deterministic for a configuration; the last sample's are shown.
    const Sample& last = ss.back();
    // Cells built in place: GCC 12 warns falsely (maybe-uninitialized) when a
    // temporary variant holding a string is moved into the vector.
    std::vector<Cell> row;
    row.emplace_back(std::in_place_type<std::string>, std::string(BucketStrategyName(c.strategy)));
    row.emplace_back(std::in_place_type<std::string>, profiles[c.profile].name);
    row.emplace_back(std::in_place_type<std::string>, std::string(ProcessName(c.process)));
    row.push_back(init.median);
    row.push_back(init.p10);
    row.push_back(init.p90);
    row.push_back(MedianOf(ss, [](const Sample& s) { return s.init_cpu_us; }));
    row.push_back(MedianOf(ss, [](const Sample& s) { return s.init_faults; }));
    row.push_back(queries_summary.median);
    row.push_back(queries_summary.p10);
    row.push_back(queries_summary.p90);
    row.push_back(MedianOf(ss, [](const Sample& s) { return s.queries_faults; }));
    row.push_back(last.rehashes);
    row.push_back(MedianOf(ss, [](const Sample& s) { return s.rehash_us; }));
    row.push_back(last.entries);
    row.push_back(last.hits);
    row.push_back(last.initial_bucket_bytes);
    row.push_back(last.bucket_bytes);
    row.push_back(last.context_held_bytes);
    row.push_back(last.memset_bytes_init);
    row.push_back(last.kernel_zeroed_bytes_init);
    row.push_back(last.bss_fallback_arrays);
    table.AddRow(std::move(row));
  }

  auto find = [&](BucketStrategy s, size_t profile, Process process) -> const std::vector<Sample>* {
    for (size_t i = 0; i < configs.size(); ++i) {
      if (configs[i].strategy == s && configs[i].profile == profile && configs[i].process == process) {
        return &samples[i];
      }
    }
    return nullptr;
  };
  const Process main_process = *fork_mode ? Process::kFork : Process::kInproc;
  auto init_us = [](const Sample& s) { return s.init_us; };
  auto init_faults = [](const Sample& s) { return s.init_faults; };
  auto queries_us = [](const Sample& s) { return s.queries_us; };

  // Where palloc0's init goes: memset of warm memory vs page faults, priced
  // by the fresh-pages memset of the same bytes.
  nlohmann::json zero_json = nlohmann::json::object();
  std::string zero_text;
  for (size_t p = 0; p < profiles.size(); ++p) {
    const double warm_us = MedianOf(zeroing[p], [](const ZeroSample& z) { return z.warm_us; });
    const double fresh_us = MedianOf(zeroing[p], [](const ZeroSample& z) { return z.fresh_us; });
    const double fresh_faults = MedianOf(zeroing[p], [](const ZeroSample& z) { return z.fresh_faults; });
    const double us_per_fault = fresh_faults > 0 ? (fresh_us - warm_us) / fresh_faults : 0;
    nlohmann::json z = {{"bytes", warm[p].size()},          {"warm_memset_us", warm_us},
                        {"fresh_pages_memset_us", fresh_us}, {"fresh_pages_minor_faults", fresh_faults},
                        {"us_per_fault", us_per_fault}};
    zero_text += absl::StrFormat(
        "  %s: %d bytes: memset of warm memory %.2f us; of fresh pages %.1f us (%.0f faults, %.2f us per fault)\n",
        profiles[p].name, warm[p].size(), warm_us, fresh_us, fresh_faults, us_per_fault);
    if (const auto* palloc0 = find(BucketStrategy::kPalloc0, p, main_process)) {
      const double init = MedianOf(*palloc0, init_us);
      const double faults = MedianOf(*palloc0, init_faults);
      const double memset_share = init > 0 ? warm_us / init : 0;
      const double fault_share = init > 0 ? std::min(1.0, faults * us_per_fault / init) : 0;
      z["palloc0_init_us"] = init;
      z["palloc0_init_minor_faults"] = faults;
      z["palloc0_memset_share"] = memset_share;
      z["palloc0_fault_share"] = fault_share;
      zero_text += absl::StrFormat(
          "    palloc0 init (%s) %.1f us with %.0f faults: memset %.1f%%, page faults ~%.0f%%, the rest "
          "(headers, bookkeeping, malloc) ~%.0f%%\n",
          std::string(ProcessName(main_process)), init, faults, 100 * memset_share, 100 * fault_share,
          100 * std::max(0.0, 1 - memset_share - fault_share));
    }
    zero_json[profiles[p].name] = z;
  }

  // expansible against palloc0: what the small start saves, what the first
  // queries then cost more.
  nlohmann::json versus = nlohmann::json::object();
  std::string versus_text;
  for (size_t p = 0; p < profiles.size(); ++p) {
    const auto* palloc0 = find(BucketStrategy::kPalloc0, p, main_process);
    const auto* expansible = find(BucketStrategy::kExpansible, p, main_process);
    if (palloc0 == nullptr || expansible == nullptr) continue;
    const double saved = MedianOf(*palloc0, init_us) - MedianOf(*expansible, init_us);
    const double extra = MedianOf(*expansible, queries_us) - MedianOf(*palloc0, queries_us);
    auto rehash_us = [](const Sample& s) { return s.rehash_us; };
    const double extra_rehash_us = MedianOf(*expansible, rehash_us) - MedianOf(*palloc0, rehash_us);
    const int64_t extra_rehashes = expansible->back().rehashes - palloc0->back().rehashes;
    versus[profiles[p].name] = {{"init_us_saved", saved},
                                {"queries_us_extra", extra},
                                {"rehash_us_extra", extra_rehash_us},
                                {"extra_rehashes", extra_rehashes}};
    versus_text += absl::StrFormat(
        "  %s: init %.1f us less; first %d lookups %.1f us more, of which rehashes %.1f us (%d more);\n"
        "        net %+.1f us for expansible counting all query time, %+.1f us counting rehashes only\n",
        profiles[p].name, saved, *lookups, extra, extra_rehash_us, extra_rehashes, extra - saved,
        extra_rehash_us - saved);
  }

  nlohmann::json header = MachineHeader();
  header["command"] = "catcache";
  header["repetitions"] = *repetitions;
  header["lookups"] = *lookups;
  header["fork"] = *fork_mode;
  header["bss_region_bytes"] = catcache::kBssRegionBytes;
  header["expansible_divisor"] = catcache::kExpansibleDivisor;
  header["zeroing"] = zero_json;
  header["expansible_vs_palloc0"] = versus;
  table.SetHeader(header);

  out << absl::StrFormat(
      "backendlab catcache: catalog-cache bucket strategies, %d interleaved repetitions, medians; %d "
      "first-query lookups; %s\n",
      *repetitions, *lookups, *fork_mode ? "each backend a forked child" : "in-process");
  out << MachineLine(header) << "\n\n";
  table.PrintText(out);
  out << "\ninit: InitCatCache of every cache. queries: the first lookups (misses load an entry, rehash\n"
         "  when entries > 2 x buckets). memset bytes: zeroed by us at init (palloc0, cache headers included);\n"
         "  kernel-zeroed bytes: bucket pages the kernel zero-fills when first touched (bss, mmap).\n";
  if (*fork_mode) {
    out << "fork: the parent never touched the bss region (the child's writes are zero-fill faults);\n"
           "  fork-touched-parent: it wrote every page before fork (the child's writes are copy-on-write faults).\n";
  }
  out << "\nZeroing the initial bucket bytes, medians:\n" << zero_text;
  if (!versus_text.empty()) out << "\nexpansible vs palloc0, medians:\n" << versus_text;

  return table.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
