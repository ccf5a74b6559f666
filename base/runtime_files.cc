// Files the tool loads at run time: an installed tool's, or the build tree's.
#include "base/runtime_files.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <system_error>

namespace backendlab {

std::string RuntimeFile(std::string_view name, std::string_view built) {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::filesystem::path beside =
        std::filesystem::path(std::string(exe, static_cast<size_t>(n))).parent_path() / kInstalledLibraryDir / name;
    std::error_code error;
    if (std::filesystem::is_regular_file(beside, error)) return beside.lexically_normal().string();
  }
  return std::string(built);
}

}  // namespace backendlab
