// Line and blank handling shared by the text formats profiling/ reads (folded
// stacks, perf script output). Not for other modules.
#ifndef BACKENDLAB_PROFILING_INTERNAL_TEXT_H_
#define BACKENDLAB_PROFILING_INTERNAL_TEXT_H_

#include <string_view>

namespace backendlab::profiling::internal {

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

inline std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return TrimRight(s);
}

// Removes the first line from *text and returns it, without its '\n'.
inline std::string_view TakeLine(std::string_view& text) {
  const size_t newline = text.find('\n');
  const std::string_view line = text.substr(0, newline);
  text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
  return line;
}

}  // namespace backendlab::profiling::internal

#endif  // BACKENDLAB_PROFILING_INTERNAL_TEXT_H_
