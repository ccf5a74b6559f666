// The flags `cycle` shares with `compare` and `profile`, parsed into lifecycle::CycleOptions.
#include "tools/cycle_flags.h"

#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "buffers/exit_check.h"
#include "buffers/shared_buffers.h"
#include "catcache/bucket_allocator.h"
#include "catcache/syscache_profile.h"
#include "lifecycle/backend_weight.h"
#include "lifecycle/compare.h"
#include "profiling/perf_events.h"
#include "waits/wait_set.h"

namespace backendlab::tools {

namespace {

// Parses flag `name`, when given, into *target; the parser's error otherwise.
template <typename T, typename Parse>
absl::Status ParseFlagInto(const Flags& flags, const char* name, Parse parse, T* target) {
  if (!flags.Has(name)) return absl::OkStatus();
  absl::StatusOr<T> value = parse(flags.Get(name));
  if (!value.ok()) return value.status();
  *target = *std::move(value);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ParseSyscacheName(std::string_view name) {
  if (absl::StatusOr<catcache::SyscacheProfile> p = catcache::BuiltinProfile(name); !p.ok()) return p.status();
  return std::string(name);
}

absl::StatusOr<std::vector<std::string>> ParseBaseline(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, '/');
  if (parts.size() < 2 || parts.size() > lifecycle::kNamedDimensions) {
    return absl::InvalidArgumentError(
        absl::StrCat("--baseline=", Quoted(text), ": expected layout/exit-check[/catcache[/syscache]], e.g. array/always"));
  }
  const std::function<absl::Status(std::string_view)> kChecks[lifecycle::kNamedDimensions] = {
      [](std::string_view v) { return buffers::ParseLayout(v).status(); },
      [](std::string_view v) { return buffers::ParseExitCheckPolicy(v).status(); },
      [](std::string_view v) { return catcache::ParseBucketStrategy(v).status(); },
      [](std::string_view v) { return ParseSyscacheName(v).status(); },
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    if (absl::Status s = kChecks[i](parts[i]); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--baseline=", Quoted(text), ": ", s.message()));
    }
  }
  return parts;
}

lifecycle::CycleOptions WithConfiguration(lifecycle::CycleOptions options, std::span<const std::string> names) {
  lifecycle::BackendConfig& b = options.backend;
  // ParseBaseline checked every name: these cannot fail.
  b.layout = *buffers::ParseLayout(names[0]);
  b.exit_check = *buffers::ParseExitCheckPolicy(names[1]);
  if (names.size() > 2) b.catcache = *catcache::ParseBucketStrategy(names[2]);
  if (names.size() > 3) b.syscache = names[3];
  return options;
}

absl::StatusOr<lifecycle::CycleOptions> CycleOptionsFromFlags(const Flags& flags, bool with_configuration) {
  lifecycle::CycleOptions o;
  lifecycle::BackendConfig& b = o.backend;
  for (absl::Status s : {
           ParseFlagInto(flags, "mode", lifecycle::ParseMode, &o.mode),
           ParseFlagInto(flags, "reap", lifecycle::ParseReap, &o.reap),
           ParseFlagInto(flags, "thread-memory", lifecycle::ParseThreadMemory, &o.thread_memory),
           ParseFlagInto(flags, "syscache", ParseSyscacheName, &b.syscache),
           ParseFlagInto(flags, "wait", waits::ParseWaitStrategy, &b.wait),
           ParseFlagInto(flags, "kernel", buffers::ParseScanKernel, &b.exit_kernel),
       }) {
    if (!s.ok()) return s;
  }
  if (with_configuration) {
    for (absl::Status s : {
             ParseFlagInto(flags, "layout", buffers::ParseLayout, &b.layout),
             ParseFlagInto(flags, "exit-check", buffers::ParseExitCheckPolicy, &b.exit_check),
             ParseFlagInto(flags, "shared-buffers", buffers::ParseSharedBuffers, &b.shared_buffers),
             ParseFlagInto(flags, "catcache", catcache::ParseBucketStrategy, &b.catcache),
         }) {
      if (!s.ok()) return s;
    }
  }
  struct IntFlag {
    const char* name;
    int64_t min, max;
    int64_t* target;
  };
  int64_t clients = 1, leak = 0, pool = 0;
  if (with_configuration && flags.Has("clients")) {
    absl::StatusOr<int64_t> v = flags.GetInt("clients", 1, kMaxClients);
    if (!v.ok()) return v.status();
    clients = *v;
  }
  // compare lists its holds as it lists its clients: a dimension of its own.
  if (with_configuration && flags.Has("hold")) {
    absl::StatusOr<int64_t> v = flags.GetInt("hold", 0, lifecycle::kMaxHold);
    if (!v.ok()) return v.status();
    o.hold = *v;
  }
  const IntFlag ints[] = {
      {"connections", 1, 100'000'000, &o.connections},
      {"warmup", 0, 1'000'000, &o.warmup},
      {"work-pins", 0, 1'000'000'000, &b.work_pins},
      {"work-lookups", 0, 100'000'000, &b.work_lookups},
      {"queries", 0, 1'000'000, &b.queries},
      {"leak-pins", 0, 1000, &leak},
      {"kill-backend", -1, INT64_MAX, &b.kill_backend},
      {"pool", 1, lifecycle::kMaxPool, &pool},
  };
  for (const IntFlag& f : ints) {
    if (!flags.Has(f.name)) continue;
    absl::StatusOr<int64_t> v = flags.GetInt(f.name, f.min, f.max);
    if (!v.ok()) return v.status();
    *f.target = *v;
  }
  o.clients = static_cast<int>(clients);
  o.pool = static_cast<int>(pool);
  b.leak_pins = static_cast<int32_t>(leak);
  // The wait set serves a backend's queries only: without them it would be
  // accepted, recorded in the report, and change nothing.
  if (flags.Given("wait") && b.queries == 0) {
    return absl::InvalidArgumentError("--wait is how a backend waits for its queries: it goes with --queries=N (N > 0)");
  }
  if (flags.Has("duration")) {
    if (flags.Has("connections")) return absl::InvalidArgumentError("give --connections or --duration, not both");
    absl::StatusOr<absl::Duration> duration = ParseDuration(flags.Get("duration"));
    if (!duration.ok()) return duration.status();
    o.duration = *duration;
    o.connections = 0;
  } else if (!flags.Has("connections")) {
    o.connections = 500;
  }
  if (flags.Has("backend-profile")) {
    absl::StatusOr<lifecycle::BackendWeight> weight = lifecycle::LoadBackendWeight(flags.Get("backend-profile"));
    if (!weight.ok()) return absl::InvalidArgumentError(absl::StrCat("--backend-profile: ", weight.status().message()));
    b.weight = *std::move(weight);
    b.weight_source = flags.Get("backend-profile");
  }
  if (flags.Has("syscalls")) {
    absl::StatusOr<bool> on = flags.GetBool("syscalls");
    if (!on.ok()) return on.status();
    b.count_syscalls = *on;
  }
  if (flags.Has("counters")) {
    absl::StatusOr<std::vector<profiling::PerfEvent>> events = profiling::ParsePerfEventList(flags.Get("counters"));
    if (!events.ok()) return events.status();
    b.counters = *std::move(events);
  }
  // compare's modes are its matrix's, and its thread memory goes to their
  // thread rows alone: checked there (SpecFromFlags).
  lifecycle::CycleOptions checked = o;
  if (!with_configuration) {
    checked.thread_memory = lifecycle::ThreadMemory::kFresh;
    checked.pool = 0;
  }
  if (absl::Status s = lifecycle::ValidateCycleOptions(checked); !s.ok()) return s;
  return o;
}

}  // namespace backendlab::tools
