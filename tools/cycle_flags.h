// The flags `cycle` shares with `compare` and `profile`, parsed into
// lifecycle::CycleOptions. What is printed of a cycle is in cycle_report.h.
#ifndef BACKENDLAB_TOOLS_CYCLE_FLAGS_H_
#define BACKENDLAB_TOOLS_CYCLE_FLAGS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "lifecycle/cycle.h"
#include "tools/flags.h"

namespace backendlab::tools {

// A built-in syscache profile's name (pg90, pg17), or InvalidArgument.
absl::StatusOr<std::string> ParseSyscacheName(std::string_view name);

// --baseline: layout/exit-check[/catcache[/syscache]], each name checked;
// InvalidArgument naming the flag otherwise.
absl::StatusOr<std::vector<std::string>> ParseBaseline(const std::string& text);

// `options` running the configuration ParseBaseline's `names` give.
lifecycle::CycleOptions WithConfiguration(lifecycle::CycleOptions options, std::span<const std::string> names);

// The options of one cycle from the flags `cycle` takes. `compare` passes
// with_configuration = false: its layouts, exit-checks, shared-buffers,
// catcaches, syscaches and clients are lists, set per configuration by the
// caller.
absl::StatusOr<lifecycle::CycleOptions> CycleOptionsFromFlags(const Flags& flags, bool with_configuration = true);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_CYCLE_FLAGS_H_
