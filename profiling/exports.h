// A profile in the formats other tools read: pprof's profile.proto
// (`go tool pprof`, Parca, Pyroscope), speedscope's JSON, and spans on a
// timeline as Chrome's trace events (Perfetto, chrome://tracing). Written
// here from folded stacks and spans; no library, no network.
#ifndef BACKENDLAB_PROFILING_EXPORTS_H_
#define BACKENDLAB_PROFILING_EXPORTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "profiling/folded_stacks.h"

namespace backendlab::profiling {

// One profile: every sample once, each stack rooted at the process that
// took it ("backend", "postmaster", an auxiliary process's name), then, if
// the sample was taken in a phase, "[phase]", then its frames root first.
struct ExportSource {
  std::string name;  // "15/128MB", "hash/assert at 8GB": the `profile` label
  const FoldedStacks* labeled = nullptr;
  int64_t period_ns = 0;  // the time one sample stands for (1e9 / frequency)
};

// What is exported: one or more profiles (a run's rows) in one file.
struct ExportInput {
  std::string title;
  std::vector<ExportSource> sources;
  // The role a process root plays, for the `role` label: "postmaster",
  // "backend" or "aux". Null: the process's own name.
  std::function<std::string(std::string_view process)> role;
};

// pprof's profile.proto (perftools.profiles.Profile), gzipped as pprof
// writes it: sample types samples/count and cpu/nanoseconds, period
// cpu/nanoseconds (the first source's); one function and one location per
// distinct frame name (no addresses, no mapping); each sample with the
// labels profile (its source's name), phase (none where the stack has no
// "[phase]"), process and role. The frames' order, leaf first, is the
// format's.
std::string ToPprofGzip(const ExportInput& input);

// speedscope's file format (https://www.speedscope.app/file-format-schema.json):
// shared frames, and a "sampled" profile per source and role ("15/128MB:
// backend"), in nanoseconds, each sample's stack root first: the process,
// its phase as "[phase]", then its frames.
std::string ToSpeedscopeJson(const ExportInput& input);

// A span of one process's life on a timeline.
struct TraceSpan {
  std::string name;       // the phase: "fork", "init_catcache", ...
  std::string category;   // "phase"
  int64_t pid = 0;        // the track
  std::string process;    // the track's name: "backend 1234 (connection 7)"
  int64_t start_ns = 0;   // CLOCK_MONOTONIC, or any clock every span shares
  int64_t duration_ns = 0;
};

// Chrome's trace event format (JSON object form): a process-name metadata
// event per track, then a complete event ("ph":"X") per span, in
// microseconds from the earliest span.
std::string ToChromeTraceJson(const std::vector<TraceSpan>& spans, std::string_view title);

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_EXPORTS_H_
