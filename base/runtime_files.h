// Files the tool loads at run time (the preload libraries a real server is
// given, the sampler library): found beside an installed binary, in
// <prefix>/lib/backendlab/ when the binary is <prefix>/bin/backendlab
// (`cmake --install`), and otherwise where the build tree put them.
#ifndef BACKENDLAB_BASE_RUNTIME_FILES_H_
#define BACKENDLAB_BASE_RUNTIME_FILES_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace backendlab {

// The running binary's path (/proc/self/exe's target); Unavailable,
// "readlink /proc/self/exe: <strerror>", where it cannot be read.
absl::StatusOr<std::string> ThisExecutable();

// The directory an installed tool keeps them in, relative to its binary's.
inline constexpr std::string_view kInstalledLibraryDir = "../lib/backendlab";

// <the running binary's directory>/../lib/backendlab/<name> if that file
// exists; else `built` (an absolute path in the build tree).
std::string RuntimeFile(std::string_view name, std::string_view built);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_RUNTIME_FILES_H_
