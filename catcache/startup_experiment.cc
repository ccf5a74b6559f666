// The startup experiment's rounds: backends in-process or in forked children
// that report through a shared page, the zeroing timings, and the medians.
#include "catcache/startup_experiment.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/compiler.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "base/resource_usage.h"
#include "catcache/catcache.h"

namespace backendlab::catcache {
namespace {

struct Config {
  BucketStrategy catcache;
  size_t syscache;  // index into the syscaches
  Process process;
};

// The page a forked backend reports through (MAP_SHARED): nothing is lost if
// the child dies, because the parent reads it only after waitpid.
struct ChildReport {
  int done;
  BackendSample sample;
  char error[256];
};

// Reaps `pid`, retrying on EINTR; once a stop is requested the child is
// killed first, so ^C never waits for a long backend.
absl::Status Reap(pid_t pid, int& status) {
  bool killed = false;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid failed: ", std::strerror(errno)));
    if (StopRequested() && !killed) {
      kill(pid, SIGKILL);
      killed = true;
    }
  }
  return absl::OkStatus();
}

// Forks a backend that measures itself and reports through `report`; the
// parent reaps it before returning, whatever happened to it.
absl::StatusOr<BackendSample> MeasureInChild(const Config& c, const SyscacheProfile& syscache,
                                             const std::vector<Lookup>& lookups, ChildReport* report) {
  // The parent's side of the BSS question: touched (resident, private: the
  // child's writes copy pages) or dropped (the child's writes zero-fill).
  absl::Status prepared = c.process == Process::kForkTouchedParent ? TouchBssRegion() : DropBssRegion();
  if (!prepared.ok()) return prepared;
  *report = ChildReport{};
  std::fflush(nullptr);  // no buffered output to be written twice
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork failed: ", std::strerror(errno)));
  if (pid == 0) {
    // A backend dies of ^C as usual; the parent sees the stop and reports it.
    DefaultStopSignals();
    // The child's first clock and getrusage calls, and its first malloc, fault
    // in pages of their own; a real backend has made them long before
    // InitCatCache, so they are made here before anything is timed.
    (void)SampleSelf();
    (void)NowNs();
    std::free(std::malloc(64));
    // The child never returns into the parent's code (nor, under a test, into
    // GoogleTest's exception handler): every way out is _exit.
    try {
      absl::StatusOr<BackendSample> s = MeasureBackend(c.catcache, syscache, lookups);
      if (!s.ok()) {
        const std::string message(s.status().message());
        std::snprintf(report->error, sizeof(report->error), "%s", message.c_str());
        _exit(1);
      }
      report->sample = *s;
    } catch (...) {
      std::snprintf(report->error, sizeof(report->error), "an exception escaped the measurement");
      _exit(1);
    }
    report->done = 1;
    _exit(0);
  }
  int status = 0;
  if (absl::Status reaped = Reap(pid, status); !reaped.ok()) return reaped;
  if (StopRequested()) return StoppedStatus();
  const std::string what = absl::StrCat("the forked backend measuring ", std::string(BucketStrategyName(c.catcache)), "/",
                                        syscache.name);
  if (WIFSIGNALED(status)) {
    return absl::InternalError(absl::StrCat(what, " died of signal ", WTERMSIG(status), " (",
                                            strsignal(WTERMSIG(status)), ")"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(what, " failed: ", report->error[0] ? report->error : "no message"));
  }
  if (report->done != 1) return absl::InternalError(absl::StrCat(what, " exited without reporting"));
  return report->sample;
}

// The shared page of the forked backends, unmapped on every way out.
struct ReportPage {
  ChildReport* page = nullptr;
  ReportPage() = default;
  ReportPage(const ReportPage&) = delete;
  ReportPage& operator=(const ReportPage&) = delete;
  ~ReportPage() {
    if (page != nullptr) munmap(page, sizeof(ChildReport));
  }
};

absl::Status CheckOptions(const StartupExperimentOptions& options) {
  if (options.catcaches.empty()) return absl::InvalidArgumentError("no catcache to measure");
  if (options.syscaches.empty()) return absl::InvalidArgumentError("no syscache to measure");
  if (options.rounds < 1) return absl::InvalidArgumentError("at least one round is needed");
  for (size_t i = 0; i < options.catcaches.size(); ++i) {
    if (std::count(options.catcaches.begin(), options.catcaches.begin() + static_cast<ptrdiff_t>(i),
                   options.catcaches[i]) > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("catcache '", std::string(BucketStrategyName(options.catcaches[i])), "' given twice"));
    }
  }
  for (size_t i = 0; i < options.syscaches.size(); ++i) {
    if (std::count(options.syscaches.begin(), options.syscaches.begin() + static_cast<ptrdiff_t>(i),
                   options.syscaches[i]) > 0) {
      return absl::InvalidArgumentError(absl::StrCat("syscache '", options.syscaches[i], "' given twice"));
    }
  }
  return absl::OkStatus();
}

StartupRow Summarize(const Config& c, const std::string& syscache, const std::vector<BackendSample>& ss) {
  StartupRow row{.catcache = c.catcache, .syscache = syscache, .process = c.process};
  std::vector<double> init_us, queries_us;
  for (const BackendSample& s : ss) {
    init_us.push_back(s.init_us);
    queries_us.push_back(s.queries_us);
  }
  row.init_us = backendlab::Summarize(init_us);
  row.queries_us = backendlab::Summarize(queries_us);
  row.init_cpu_us = MedianOf(ss, [](const BackendSample& s) { return s.init_cpu_us; });
  row.init_faults = MedianOf(ss, [](const BackendSample& s) { return s.init_faults; });
  row.queries_faults = MedianOf(ss, [](const BackendSample& s) { return s.queries_faults; });
  row.rehash_us = MedianOf(ss, [](const BackendSample& s) { return s.rehash_us; });
  row.last = ss.back();
  return row;
}

}  // namespace

absl::StatusOr<BackendSample> MeasureBackend(BucketStrategy catcache, const SyscacheProfile& syscache,
                                             const std::vector<Lookup>& lookups) {
  BackendSample s;
  const ResourceSample r0 = SampleSelf();
  const int64_t t0 = NowNs();
  absl::StatusOr<std::unique_ptr<CatCacheSet>> set = CatCacheSet::Create(catcache, syscache);
  const int64_t t1 = NowNs();
  const ResourceSample r1 = SampleSelf();
  if (!set.ok()) return set.status();
  const CatCacheSetStats init = (*set)->Stats();

  const ResourceSample r2 = SampleSelf();
  const int64_t t2 = NowNs();
  absl::StatusOr<FirstQueriesResult> result = RunFirstQueries(**set, lookups);
  const int64_t t3 = NowNs();
  const ResourceSample r3 = SampleSelf();
  if (!result.ok()) return result.status();
  const CatCacheSetStats end = (*set)->Stats();

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
  return s;
}

absl::StatusOr<ZeroSample> MeasureZeroing(std::vector<char>& warm) {
  ZeroSample z;
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
  return z;
}

absl::StatusOr<StartupExperimentResult> RunStartupExperiment(const StartupExperimentOptions& options) {
  if (absl::Status checked = CheckOptions(options); !checked.ok()) return checked;
  std::vector<SyscacheProfile> syscaches;
  for (const std::string& name : options.syscaches) {
    absl::StatusOr<SyscacheProfile> p = BuiltinProfile(name);
    if (!p.ok()) return p.status();
    syscaches.push_back(*std::move(p));
  }
  InstallStopHandlers();

  const Process main_process = options.fork ? Process::kFork : Process::kInproc;
  std::vector<Config> configs;
  for (size_t p = 0; p < syscaches.size(); ++p) {
    for (BucketStrategy s : options.catcaches) {
      configs.push_back({s, p, main_process});
      if (options.fork && s == BucketStrategy::kBss) configs.push_back({s, p, Process::kForkTouchedParent});
    }
  }
  std::vector<std::vector<Lookup>> queries;
  std::vector<std::vector<char>> warm;
  for (const SyscacheProfile& p : syscaches) {
    queries.push_back(MakeFirstQueries(p, options.lookups));
    warm.emplace_back(p.TotalBuckets() * sizeof(Bucket), 1);
  }

  ReportPage report;
  if (options.fork) {
    void* page = mmap(nullptr, sizeof(ChildReport), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return absl::InternalError(absl::StrCat("mmap failed: ", std::strerror(errno)));
    report.page = static_cast<ChildReport*>(page);
  }

  std::vector<std::vector<BackendSample>> samples(configs.size());
  std::vector<std::vector<ZeroSample>> zeroing(syscaches.size());
  absl::Status measured = RunInterleaved(
      "catcache", options.rounds, configs.size(),
      [&](size_t index, int64_t) {
        const Config& c = configs[index];
        absl::StatusOr<BackendSample> s =
            c.process == Process::kInproc
                ? MeasureBackend(c.catcache, syscaches[c.syscache], queries[c.syscache])
                : MeasureInChild(c, syscaches[c.syscache], queries[c.syscache], report.page);
        if (!s.ok()) return s.status();
        samples[index].push_back(*s);
        return absl::OkStatus();
      },
      [&](int64_t) {
        for (size_t p = 0; p < syscaches.size(); ++p) {
          absl::StatusOr<ZeroSample> z = MeasureZeroing(warm[p]);
          if (!z.ok()) return z.status();
          zeroing[p].push_back(*z);
        }
        return absl::OkStatus();
      });
  if (!measured.ok()) return measured;

  StartupExperimentResult result;
  result.main_process = main_process;
  for (size_t i = 0; i < configs.size(); ++i) {
    result.rows.push_back(Summarize(configs[i], syscaches[configs[i].syscache].name, samples[i]));
  }
  auto find = [&](BucketStrategy s, size_t syscache) -> const std::vector<BackendSample>* {
    for (size_t i = 0; i < configs.size(); ++i) {
      if (configs[i].catcache == s && configs[i].syscache == syscache && configs[i].process == main_process) {
        return &samples[i];
      }
    }
    return nullptr;
  };
  auto init_us = [](const BackendSample& s) { return s.init_us; };
  auto queries_us = [](const BackendSample& s) { return s.queries_us; };
  auto rehash_us = [](const BackendSample& s) { return s.rehash_us; };
  for (size_t p = 0; p < syscaches.size(); ++p) {
    ZeroingFigures z{.syscache = syscaches[p].name, .bytes = warm[p].size()};
    z.warm_memset_us = MedianOf(zeroing[p], [](const ZeroSample& s) { return s.warm_us; });
    z.fresh_pages_memset_us = MedianOf(zeroing[p], [](const ZeroSample& s) { return s.fresh_us; });
    z.fresh_pages_minor_faults = MedianOf(zeroing[p], [](const ZeroSample& s) { return s.fresh_faults; });
    z.us_per_fault = z.fresh_pages_minor_faults > 0
                         ? (z.fresh_pages_memset_us - z.warm_memset_us) / z.fresh_pages_minor_faults
                         : 0;
    if (const auto* palloc0 = find(BucketStrategy::kPalloc0, p)) {
      ZeroingFigures::Palloc0Shares shares;
      shares.init_us = MedianOf(*palloc0, init_us);
      shares.init_minor_faults = MedianOf(*palloc0, [](const BackendSample& s) { return s.init_faults; });
      shares.memset_share = shares.init_us > 0 ? z.warm_memset_us / shares.init_us : 0;
      shares.fault_share =
          shares.init_us > 0 ? std::min(1.0, shares.init_minor_faults * z.us_per_fault / shares.init_us) : 0;
      z.palloc0 = shares;
    }
    result.zeroing.push_back(z);

    const auto* palloc0 = find(BucketStrategy::kPalloc0, p);
    const auto* expansible = find(BucketStrategy::kExpansible, p);
    if (palloc0 == nullptr || expansible == nullptr) continue;
    result.expansible_vs_palloc0.push_back({
        .syscache = syscaches[p].name,
        .init_us_saved = MedianOf(*palloc0, init_us) - MedianOf(*expansible, init_us),
        .queries_us_extra = MedianOf(*expansible, queries_us) - MedianOf(*palloc0, queries_us),
        .rehash_us_extra = MedianOf(*expansible, rehash_us) - MedianOf(*palloc0, rehash_us),
        .extra_rehashes = expansible->back().rehashes - palloc0->back().rehashes,
    });
  }
  return result;
}

}  // namespace backendlab::catcache
