// Parsing of the names that stand for enum values everywhere (CLI flags, JSON
// keys, docs): one implementation, one error wording.
#ifndef BACKENDLAB_BASE_NAMES_H_
#define BACKENDLAB_BASE_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace backendlab {

// The value among `all` whose name_of() is `name`, or InvalidArgument:
// "unknown layout 'foo' (expected array, bytes or hash)".
template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseName(std::string_view name, const Enum (&all)[N], std::string_view (*name_of)(Enum),
                               std::string_view what) {
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    if (name_of(all[i]) == name) return all[i];
    expected += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(name_of(all[i]));
  }
  return absl::InvalidArgumentError("unknown " + std::string(what) + " '" + std::string(name) + "' (expected " +
                                    expected + ")");
}

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_NAMES_H_
