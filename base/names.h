// Parsing of the names that stand for enum values everywhere (CLI flags, JSON
// keys, docs): one implementation, one error wording.
#ifndef BACKENDLAB_BASE_NAMES_H_
#define BACKENDLAB_BASE_NAMES_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace backendlab {

// One row of an enum's name table: the single place a value's name is spelled.
// Declare the table once, beside the enum, listing every value in order:
//   inline constexpr NamedValue<Layout> kLayoutNames[] = {{Layout::kArray, "array"}, ...};
template <typename Enum>
struct NamedValue {
  Enum value;
  std::string_view name;
};

// The values of `table`, in its order: the list to loop over every value.
//   inline constexpr auto kAllLayouts = ValuesOf(kLayoutNames);
template <typename Enum, size_t N>
constexpr std::array<Enum, N> ValuesOf(const NamedValue<Enum> (&table)[N]) {
  std::array<Enum, N> values{};
  for (size_t i = 0; i < N; ++i) values[i] = table[i].value;
  return values;
}

// Whether `table` lists its enum's values 0, 1, 2, ... in order, each once:
// what a table indexed by the enum needs (static_assert it beside the table).
template <typename Enum, size_t N>
constexpr bool InEnumOrder(const NamedValue<Enum> (&table)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(table[i].value) != i) return false;
  }
  return true;
}

// The name of `value` in `table`; "?" for a value the table lacks (a bug).
template <typename Enum, size_t N>
constexpr std::string_view NameOf(Enum value, const NamedValue<Enum> (&table)[N]) {
  for (const NamedValue<Enum>& row : table) {
    if (row.value == value) return row.name;
  }
  return "?";
}

// The value whose name is `name`, or InvalidArgument:
// "unknown layout 'foo' (expected array, bytes or hash)".
template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseName(std::string_view name, const NamedValue<Enum> (&table)[N], std::string_view what) {
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    if (table[i].name == name) return table[i].value;
    expected += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(table[i].name);
  }
  return absl::InvalidArgumentError("unknown " + std::string(what) + " '" + std::string(name) + "' (expected " +
                                    expected + ")");
}

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_NAMES_H_
