// The what-if names, and what each changes in a server's options.
#include "pgreal/what_if.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace backendlab::pgreal {
namespace {

constexpr char kPreloadPrefix[] = "preload:";
constexpr char kKnown[] = "openssl-no-atexit, quick-exit, huge-pages, preload:PATH, setup-durations";

}  // namespace

std::string WhatIf::name() const {
  switch (kind) {
    case WhatIfKind::kOpensslNoAtexit: return "openssl-no-atexit";
    case WhatIfKind::kQuickExit: return "quick-exit";
    case WhatIfKind::kHugePages: return "huge-pages";
    case WhatIfKind::kPreload: return kPreloadPrefix + path;
    case WhatIfKind::kSetupDurations: return "setup-durations";
  }
  return "?";
}

absl::StatusOr<WhatIf> ParseWhatIf(std::string_view text) {
  WhatIf w;
  if (text == "openssl-no-atexit") {
    w.kind = WhatIfKind::kOpensslNoAtexit;
  } else if (text == "quick-exit") {
    w.kind = WhatIfKind::kQuickExit;
  } else if (text == "huge-pages") {
    w.kind = WhatIfKind::kHugePages;
  } else if (text == "setup-durations") {
    w.kind = WhatIfKind::kSetupDurations;
  } else if (text.starts_with(kPreloadPrefix)) {
    w.kind = WhatIfKind::kPreload;
    w.path = std::string(text.substr(sizeof kPreloadPrefix - 1));
    struct stat st;
    if (w.path.empty() || stat(w.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(w.path.c_str(), R_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--what-if=", std::string(text), ": ", w.path.empty() ? "no library named" : "not a readable file"));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--what-if: unknown '", std::string(text), "'; known: ", kKnown));
  }
  return w;
}

absl::StatusOr<std::vector<WhatIf>> ParseWhatIfs(std::span<const std::string> texts) {
  std::vector<WhatIf> what_ifs;
  for (const std::string& text : texts) {
    absl::StatusOr<WhatIf> w = ParseWhatIf(text);
    if (!w.ok()) return w.status();
    for (const WhatIf& seen : what_ifs) {
      if (seen.name() == w->name()) return absl::InvalidArgumentError(absl::StrCat("--what-if: ", text, " named twice"));
    }
    what_ifs.push_back(*std::move(w));
  }
  return what_ifs;
}

absl::Status ApplyWhatIf(const WhatIf& what_if, ServerOptions& options) {
  const int major = options.installation.major;
  options.what_if = what_if.name();
  switch (what_if.kind) {
    case WhatIfKind::kOpensslNoAtexit:
    case WhatIfKind::kQuickExit:
      options.preload = WhatIfLibraryPath(what_if.kind);
      options.preload_applied_line = absl::StrCat("backendlab what-if ", what_if.name(), ": applied");
      return absl::OkStatus();
    case WhatIfKind::kPreload:
      options.preload = what_if.path;
      return absl::OkStatus();
    case WhatIfKind::kHugePages:
      if (major > 0 && major < 15) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--what-if=huge-pages needs PostgreSQL 15 or later (its shared_memory_size_in_huge_pages tells the pages to "
            "reserve); PostgreSQL ", major, " is in the run"));
      }
      options.overrides.emplace_back("huge_pages", "on");
      return absl::OkStatus();
    case WhatIfKind::kSetupDurations:
      if (major > 0 && major < 18) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--what-if=setup-durations needs PostgreSQL 18 or later (log_connections=setup_durations); PostgreSQL ",
            major, " is in the run"));
      }
      options.overrides.emplace_back("log_connections", "setup_durations");
      return absl::OkStatus();
  }
  return absl::InternalError("unknown what-if");
}

std::string DescribeWhatIf(std::string_view name) {
  if (name == "openssl-no-atexit") {
    return "OpenSSL initialised with OPENSSL_INIT_NO_ATEXIT before the server's main(): no OPENSSL_cleanup at exit";
  }
  if (name == "quick-exit") {
    return "_exit() once PostgreSQL's exit callbacks have run: no atexit handlers, no library destructors";
  }
  if (name == "huge-pages") return "huge_pages=on, the huge pages it needs reserved";
  if (name == "setup-durations") {
    return "log_connections=setup_durations: the server's own clock, and its ratio what that logging costs";
  }
  if (name.starts_with(kPreloadPrefix)) return "the library LD_PRELOADed into the postmaster";
  return "";
}

std::string WhatIfLibraryPath(WhatIfKind kind) {
  switch (kind) {
    case WhatIfKind::kOpensslNoAtexit: return BACKENDLAB_OPENSSL_NO_ATEXIT_LIBRARY;
    case WhatIfKind::kQuickExit: return BACKENDLAB_QUICK_EXIT_LIBRARY;
    default: return "";
  }
}

}  // namespace backendlab::pgreal
