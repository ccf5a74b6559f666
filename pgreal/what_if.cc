// What-ifs by name, and what each changes in a server's options, all read
// off the one list (pgreal/what_if/what_if_list.h).
#include "pgreal/what_if.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/runtime_files.h"

namespace backendlab::pgreal {
namespace {

// The file starts with ELF's magic number, as every shared library does.
bool HasElfHeader(const std::string& path) {
  char magic[SELFMAG] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, sizeof magic) && std::memcmp(magic, ELFMAG, SELFMAG) == 0;
}

}  // namespace

std::string WhatIf::name() const {
  const std::string name = WhatIfRowOf(kind).name;
  return kind == WhatIfKind::kPreload ? name + path : name;
}

absl::StatusOr<WhatIf> ParseWhatIf(std::string_view text) {
  std::string known;
  for (const WhatIfRow& row : kWhatIfs) {
    const std::string_view name = row.name;
    absl::StrAppend(&known, known.empty() ? "" : ", ", std::string(name), row.kind == WhatIfKind::kPreload ? "PATH" : "");
    if (row.kind != WhatIfKind::kPreload && text == name) return WhatIf{row.kind, ""};
    if (row.kind == WhatIfKind::kPreload && text.starts_with(name)) {
      WhatIf w{row.kind, std::string(text.substr(name.size()))};
      struct stat st;
      if (w.path.empty() || stat(w.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(w.path.c_str(), R_OK) != 0) {
        return absl::InvalidArgumentError(absl::StrCat("`what_if`=", std::string(text), ": ",
                                                       w.path.empty() ? "no library named" : "not a readable file"));
      }
      // Found out here, not by ld.so once a server has started (and the
      // file been copied into its directory).
      if (!HasElfHeader(w.path)) {
        return absl::InvalidArgumentError(
            absl::StrCat("`what_if`=", std::string(text), ": not a shared library (no ELF header)"));
      }
      return w;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("`what_if`: unknown '", std::string(text), "'; known: ", known));
}

absl::StatusOr<std::vector<WhatIf>> ParseWhatIfs(std::span<const std::string> texts) {
  std::vector<WhatIf> what_ifs;
  for (const std::string& text : texts) {
    absl::StatusOr<WhatIf> w = ParseWhatIf(text);
    if (!w.ok()) return w.status();
    for (const WhatIf& seen : what_ifs) {
      if (seen == *w) return absl::InvalidArgumentError(absl::StrCat("`what_if`: ", text, " named twice"));
    }
    what_ifs.push_back(*std::move(w));
  }
  return what_ifs;
}

absl::Status ApplyWhatIf(const WhatIf& what_if, ServerOptions& options) {
  const WhatIfRow& row = WhatIfRowOf(what_if.kind);
  const int major = options.installation.major;
  if (major > 0 && major < row.minimum_major) {
    return absl::InvalidArgumentError(absl::StrCat("`what_if`=", row.name, " needs PostgreSQL ", row.minimum_major,
                                                   " or later (", row.why_minimum, "); PostgreSQL ", major,
                                                   " is in the run"));
  }
  options.what_if = what_if.name();
  if (what_if.kind == WhatIfKind::kPreload) options.preload = what_if.path;
  if (*row.library != '\0') {
    options.preload = WhatIfLibraryPath(what_if.kind);
    options.preload_applied_line = absl::StrCat(kAppliedLinePrefix, row.name, kAppliedLineWord);
  }
  if (*row.setting != '\0') options.overrides.emplace_back(row.setting, row.value);
  return absl::OkStatus();
}

std::string WhatIfLibraryPath(WhatIfKind kind) {
  const WhatIfRow& row = WhatIfRowOf(kind);
  if (*row.library == '\0') return "";
  const std::string file = absl::StrCat("libbackendlab_", row.library, ".so");
  return RuntimeFile(file, absl::StrCat(BACKENDLAB_WHAT_IF_LIBRARY_DIR, "/", file));
}

}  // namespace backendlab::pgreal
