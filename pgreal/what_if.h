// A what-if: one change to a real PostgreSQL server the tool starts, made
// without rebuilding it, measured as a row of its own beside the stock
// server in the same interleaved rounds (`pg --what-if=NAME[,NAME...]`).
// Each is a measuring device, applied only to servers the tool started, and
// each row, JSON record and profile names it. pgreal/README.md says what
// each changes and how PostgreSQL itself could make the same change.
#ifndef BACKENDLAB_PGREAL_WHAT_IF_H_
#define BACKENDLAB_PGREAL_WHAT_IF_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pgreal/server.h"

namespace backendlab::pgreal {

enum class WhatIfKind {
  // OpenSSL initialised with OPENSSL_INIT_NO_ATEXIT before the server's main
  // (pgreal/what_if/openssl_no_atexit.cc).
  kOpensslNoAtexit,
  // _exit() once PostgreSQL's own exit callbacks have run
  // (pgreal/what_if/quick_exit.cc).
  kQuickExit,
  // huge_pages=on, with the huge pages the server needs reserved
  // (pgreal/huge_pages.h).
  kHugePages,
  // A user's own library, LD_PRELOADed into the postmaster.
  kPreload,
  // log_connections=setup_durations (18+): the server's own clock of each
  // connection's set-up, read from its log; added for every 18+ server, its
  // ratio to stock being what the logging costs.
  kSetupDurations,
};

struct WhatIf {
  WhatIfKind kind = WhatIfKind::kOpensslNoAtexit;
  std::string path;  // kPreload: the library, as given
  // "openssl-no-atexit", "quick-exit", "huge-pages", "preload:PATH", "setup-durations".
  std::string name() const;
};

// One --what-if entry; InvalidArgument listing the known names otherwise,
// or for a preload: whose library is not a readable file.
absl::StatusOr<WhatIf> ParseWhatIf(std::string_view text);
// Each of a --what-if list; one named twice is InvalidArgument.
absl::StatusOr<std::vector<WhatIf>> ParseWhatIfs(std::span<const std::string> texts);

// The server's options with the change made: a library to preload, or a
// setting. InvalidArgument for a change the server's major cannot take
// (setup-durations before 18, huge-pages before 15: it is
// shared_memory_size_in_huge_pages that tells the pages a server needs).
absl::Status ApplyWhatIf(const WhatIf& what_if, ServerOptions& options);

// What the change named `name` (WhatIf::name()) does, in a line.
std::string DescribeWhatIf(std::string_view name);

// The what-if library the build made for a kind that has one ("" for the others).
std::string WhatIfLibraryPath(WhatIfKind kind);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_WHAT_IF_H_
