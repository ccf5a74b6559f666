// Parser for shared_buffers sizes.
#include "buffers/shared_buffers.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "buffers/refcount_table.h"

namespace backendlab::buffers {
namespace {

absl::Status Bad(std::string_view text, std::string_view why) {
  // Escaped, so that input holding a newline still gives a one-line error.
  return absl::InvalidArgumentError(
      absl::StrCat("invalid shared_buffers '", absl::CEscape(std::string(text)), "': ", std::string(why)));
}

}  // namespace

absl::StatusOr<SharedBuffers> ParseSharedBuffers(std::string_view text) {
  if (text.empty()) return Bad(text, "empty (write a size such as 128MB or 8GB)");
  if (text.front() == '-') return Bad(text, "a size cannot be negative");
  size_t digits = 0;
  uint64_t number = 0;
  for (; digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])); ++digits) {
    if (number > (UINT64_MAX - 9) / 10) return Bad(text, "number too large");
    number = number * 10 + static_cast<uint64_t>(text[digits] - '0');
  }
  if (digits == 0) return Bad(text, "must start with a number (e.g. 128MB)");
  std::string_view unit = text.substr(digits);
  if (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) {
    // Only whitespace after the number: there is no unit to suggest.
    size_t start = 0;
    while (start < unit.size() && std::isspace(static_cast<unsigned char>(unit[start]))) ++start;
    if (start == unit.size()) return Bad(text, "missing unit (kB, MB, GB or TB) after the number");
    return Bad(text, absl::StrCat("no space between number and unit (write ", std::string(text.substr(0, digits)),
                                  absl::CEscape(std::string(unit.substr(start))), ")"));
  }
  if (number == 0) return Bad(text, "must be greater than zero");
  if (unit.empty()) return Bad(text, "missing unit (kB, MB, GB or TB)");
  int shift;
  const std::string lower = absl::AsciiStrToLower(std::string(unit));
  if (lower == "kb") {
    shift = 10;
  } else if (lower == "mb") {
    shift = 20;
  } else if (lower == "gb") {
    shift = 30;
  } else if (lower == "tb") {
    shift = 40;
  } else {
    return Bad(text, absl::StrCat("unknown unit '", absl::CEscape(std::string(unit)), "' (expected kB, MB, GB or TB)"));
  }
  if (number > (UINT64_MAX >> shift)) return Bad(text, "size too large");
  const uint64_t bytes = number << shift;
  if (bytes % kBlockSize != 0) return Bad(text, "not a whole number of 8kB buffers");
  const uint64_t nbuffers = bytes / kBlockSize;
  if (nbuffers > kMaxNBuffers) return Bad(text, "more than 2^30 buffers (the limit is 8TB)");
  return SharedBuffers{bytes, static_cast<uint32_t>(nbuffers)};
}

std::string FormatSize(uint64_t bytes) {
  static constexpr struct {
    int shift;
    const char* unit;
  } kUnits[] = {{40, "TB"}, {30, "GB"}, {20, "MB"}, {10, "kB"}};
  for (const auto& u : kUnits) {
    if (bytes >= (uint64_t{1} << u.shift) && bytes % (uint64_t{1} << u.shift) == 0) {
      return absl::StrCat(bytes >> u.shift, u.unit);
    }
  }
  return absl::StrCat(bytes, "B");
}

}  // namespace backendlab::buffers
