// Files the tool loads at run time: an installed tool's, or the build tree's.
#include "base/runtime_files.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace backendlab {

absl::StatusOr<std::string> ThisExecutable() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return absl::UnavailableError(absl::StrCat("readlink /proc/self/exe: ", std::strerror(errno)));
  return std::string(exe, static_cast<size_t>(n));
}

std::string RuntimeFile(std::string_view name, std::string_view built) {
  if (absl::StatusOr<std::string> exe = ThisExecutable(); exe.ok()) {
    const std::filesystem::path beside = std::filesystem::path(*exe).parent_path() / kInstalledLibraryDir / name;
    std::error_code error;
    if (std::filesystem::is_regular_file(beside, error)) return beside.lexically_normal().string();
  }
  return std::string(built);
}

}  // namespace backendlab
