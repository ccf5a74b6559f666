// A what-if: one change to a real PostgreSQL server the tool starts, made
// without rebuilding it, measured as a row of its own beside the stock
// server in the same interleaved rounds (`pg --what-if=NAME[,NAME...]`).
// Each is a measuring device, applied only to servers the tool started, and
// each row, JSON record and profile names it. The what-ifs are one list,
// pgreal/what_if/what_if_list.h; pgreal/README.md says what each changes and
// how PostgreSQL itself could make the same change.
#ifndef BACKENDLAB_PGREAL_WHAT_IF_H_
#define BACKENDLAB_PGREAL_WHAT_IF_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pgreal/server.h"
#include "pgreal/what_if/what_if_list.h"

namespace backendlab::pgreal {

struct WhatIf {
  WhatIfKind kind = WhatIfKind::kOpensslNoAtexit;
  std::string path;  // kPreload: the library, as given
  // Its row's name; a preload's with its path ("preload:PATH").
  std::string name() const;
  // What it changes, in a line (its row's description).
  std::string_view description() const { return WhatIfRowOf(kind).description; }
  bool operator==(const WhatIf&) const = default;
};

// One what-if by name; InvalidArgument listing the known names otherwise,
// or for a preload: whose library is not a readable file.
absl::StatusOr<WhatIf> ParseWhatIf(std::string_view text);
// Each of a list; one named twice is InvalidArgument.
absl::StatusOr<std::vector<WhatIf>> ParseWhatIfs(std::span<const std::string> texts);

// The server's options with the change made: its shim to preload (and the
// line it logs once applied), its setting. InvalidArgument for a server
// older than the what-if's minimum major.
absl::Status ApplyWhatIf(const WhatIf& what_if, ServerOptions& options);

// The shim the build made for a kind that has one ("" for the others).
std::string WhatIfLibraryPath(WhatIfKind kind);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_WHAT_IF_H_
