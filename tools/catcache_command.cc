// `backendlab catcache`: flags -> catcache::RunStartupExperiment -> the table,
// the zeroing split and expansible vs palloc0, and the JSON/CSV files.
#include "tools/catcache_command.h"

#include <algorithm>
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "catcache/startup_experiment.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

using catcache::StartupRow;

constexpr FlagSpec kCatcacheFlags[] = {
    {"catcaches", "palloc0,bss,expansible,mmap", "catcaches (bucket allocation strategies) to compare"},
    {"syscaches", "pg90,pg17", "syscaches (cache sets and initial bucket counts)"},
    {"lookups", "5000", "first-query lookups per backend after init"},
    {"fork", "off", "on: measure every backend in a forked child (--fork alone = on)"},
    {"rounds", "31", "interleaved rounds; medians are reported"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};

absl::StatusOr<catcache::StartupExperimentOptions> ParseCatcacheOptions(const Flags& flags) {
  catcache::StartupExperimentOptions options;
  absl::StatusOr<std::vector<std::string>> catcaches = flags.GetList("catcaches");
  if (!catcaches.ok()) return catcaches.status();
  for (const std::string& name : *catcaches) {
    absl::StatusOr<catcache::BucketStrategy> s = catcache::ParseBucketStrategy(name);
    if (!s.ok()) return s.status();
    options.catcaches.push_back(*s);
  }
  absl::StatusOr<std::vector<std::string>> syscaches = flags.GetList("syscaches");
  if (!syscaches.ok()) return syscaches.status();
  options.syscaches = *syscaches;
  absl::StatusOr<int64_t> lookups = flags.GetInt("lookups", 0, 10'000'000);
  if (!lookups.ok()) return lookups.status();
  options.lookups = *lookups;
  absl::StatusOr<int64_t> rounds = flags.GetInt("rounds", 1, 1000);
  if (!rounds.ok()) return rounds.status();
  options.rounds = *rounds;
  absl::StatusOr<bool> fork = flags.GetBool("fork");
  if (!fork.ok()) return fork.status();
  options.fork = *fork;
  return options;
}

Report RowsTable(const std::vector<StartupRow>& rows) {
  Report table({
      {"catcache", "catcache"},
      {"syscache", "syscache"},
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
  });
  for (const StartupRow& r : rows) {
    Report::Row row = table.NewRow();
    row.Set("catcache", std::string(catcache::BucketStrategyName(r.catcache)))
        .Set("syscache", r.syscache)
        .Set("process", std::string(catcache::ProcessName(r.process)))
        .Set("init_us", r.init_us.median)
        .Set("init_us_p10", r.init_us.p10)
        .Set("init_us_p90", r.init_us.p90)
        .Set("init_cpu_us", r.init_cpu_us)
        .Set("init_minor_faults", r.init_faults)
        .Set("queries_us", r.queries_us.median)
        .Set("queries_us_p10", r.queries_us.p10)
        .Set("queries_us_p90", r.queries_us.p90)
        .Set("queries_minor_faults", r.queries_faults)
        .Set("rehashes", r.last.rehashes)
        .Set("rehash_us", r.rehash_us)
        .Set("entries", r.last.entries)
        .Set("hits", r.last.hits)
        .Set("initial_bucket_bytes", r.last.initial_bucket_bytes)
        .Set("bucket_bytes", r.last.bucket_bytes)
        .Set("context_held_bytes", r.last.context_held_bytes)
        .Set("memset_bytes_init", r.last.memset_bytes_init)
        .Set("kernel_zeroed_bytes_init", r.last.kernel_zeroed_bytes_init)
        .Set("bss_fallback_arrays", r.last.bss_fallback_arrays);
    table.AddRow(std::move(row));
  }
  return table;
}

}  // namespace

std::string CatcacheUsage() {
  return absl::StrCat(
      "usage: backendlab catcache [flags]\n"
      "Compares where a backend's catalog-cache buckets come from (palloc0, bss,\n"
      "expansible, mmap) for the PostgreSQL 9.0 and 17 syscaches: init cost with\n"
      "its page faults, the first queries after it (with rehashes), and memory held.\n\n",
      FlagsHelp(kCatcacheFlags));
}

absl::Status RunCatcacheCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kCatcacheFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<catcache::StartupExperimentOptions> options = ParseCatcacheOptions(*flags);
  if (!options.ok()) return options.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  absl::StatusOr<catcache::StartupExperimentResult> result = catcache::RunStartupExperiment(*options);
  if (!result.ok()) return result.status();
  const std::string process(catcache::ProcessName(result->main_process));

  nlohmann::json zero_json = nlohmann::json::object();
  std::string zero_text;
  for (const catcache::ZeroingFigures& z : result->zeroing) {
    nlohmann::json j = {{"bytes", z.bytes},
                        {"warm_memset_us", z.warm_memset_us},
                        {"fresh_pages_memset_us", z.fresh_pages_memset_us},
                        {"fresh_pages_minor_faults", z.fresh_pages_minor_faults},
                        {"us_per_fault", z.us_per_fault}};
    zero_text += absl::StrFormat(
        "  %s: %d bytes: memset of warm memory %.2f us; of fresh pages %.1f us (%.0f faults, %.2f us per fault)\n",
        z.syscache, z.bytes, z.warm_memset_us, z.fresh_pages_memset_us, z.fresh_pages_minor_faults, z.us_per_fault);
    if (z.palloc0) {
      const auto& p = *z.palloc0;
      j["palloc0_init_us"] = p.init_us;
      j["palloc0_init_minor_faults"] = p.init_minor_faults;
      j["palloc0_memset_share"] = p.memset_share;
      j["palloc0_fault_share"] = p.fault_share;
      zero_text += absl::StrFormat(
          "    palloc0 init (%s) %.1f us with %.0f faults: memset %.1f%%, page faults ~%.0f%%, the rest "
          "(headers, bookkeeping, block mappings) ~%.0f%%\n",
          process, p.init_us, p.init_minor_faults, 100 * p.memset_share, 100 * p.fault_share,
          100 * std::max(0.0, 1 - p.memset_share - p.fault_share));
    }
    zero_json[z.syscache] = j;
  }
  nlohmann::json versus = nlohmann::json::object();
  std::string versus_text;
  for (const catcache::ExpansibleVsPalloc0& v : result->expansible_vs_palloc0) {
    versus[v.syscache] = {{"init_us_saved", v.init_us_saved},
                          {"queries_us_extra", v.queries_us_extra},
                          {"rehash_us_extra", v.rehash_us_extra},
                          {"extra_rehashes", v.extra_rehashes}};
    versus_text += absl::StrFormat(
        "  %s: init %.1f us less; first %d lookups %.1f us more, of which rehashes %.1f us (%d more);\n"
        "        net %+.1f us for expansible counting all query time, %+.1f us counting rehashes only\n",
        v.syscache, v.init_us_saved, options->lookups, v.queries_us_extra, v.rehash_us_extra, v.extra_rehashes,
        v.queries_us_extra - v.init_us_saved, v.rehash_us_extra - v.init_us_saved);
  }

  Report table = RowsTable(result->rows);
  nlohmann::json header = MachineHeader();
  header["command"] = "catcache";
  header["rounds"] = options->rounds;
  header["lookups"] = options->lookups;
  header["fork"] = options->fork;
  header["bss_region_bytes"] = catcache::kBssRegionBytes;
  header["expansible_divisor"] = catcache::kExpansibleDivisor;
  header["zeroing"] = zero_json;
  header["expansible_vs_palloc0"] = versus;
  table.SetHeader(header);

  out << absl::StrFormat(
      "backendlab catcache: catalog-cache bucket allocation, %d interleaved rounds, medians; %d first-query "
      "lookups; %s\n",
      options->rounds, options->lookups, options->fork ? "each backend a forked child" : "in-process");
  out << MachineLine(header) << "\n\n";
  table.PrintText(out);
  out << "\ninit: InitCatCache of every cache. queries: the first lookups (misses load an entry, rehash\n"
         "  when entries > 2 x buckets). memset bytes: zeroed by us at init (palloc0, cache headers included);\n"
         "  kernel-zeroed bytes: bucket pages the kernel zero-fills when first touched (bss, mmap).\n";
  if (options->fork) {
    out << "fork: the parent never touched the bss region (the child's writes are zero-fill faults);\n"
           "  fork-touched-parent: it wrote every page before fork (the child's writes are copy-on-write faults).\n";
  }
  out << "\nZeroing the initial bucket bytes, medians:\n" << zero_text;
  if (!versus_text.empty()) out << "\nexpansible vs palloc0, medians:\n" << versus_text;
  return table.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
