// The "connection ready" line of PostgreSQL 18's log_connections=setup_durations.
#include "pgreal/setup_durations.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"

namespace backendlab::pgreal {
namespace {

constexpr std::string_view kMessage = "connection ready: setup total=";

// A figure as %.3f prints one: digits, a point, three digits; then `after`.
// Advances `rest` past both.
bool TakeMilliseconds(std::string_view& rest, std::string_view after, double& ms) {
  size_t end = 0;
  while (end < rest.size() && ((rest[end] >= '0' && rest[end] <= '9') || rest[end] == '.')) ++end;
  const std::string_view number = rest.substr(0, end);
  const size_t point = number.find('.');
  if (point == 0 || point == std::string_view::npos || number.size() - point - 1 != 3 ||
      number.find('.', point + 1) != std::string_view::npos) {
    return false;
  }
  if (!absl::SimpleAtod(absl::string_view(number.data(), number.size()), &ms) || !std::isfinite(ms) || ms < 0) return false;
  rest.remove_prefix(end);
  if (rest.substr(0, after.size()) != after) return false;
  rest.remove_prefix(after.size());
  return true;
}

}  // namespace

std::optional<SetupDurations> ParseSetupDurations(std::string_view line) {
  const size_t at = line.find(kMessage);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + kMessage.size());
  SetupDurations d;
  if (!TakeMilliseconds(rest, " ms, fork=", d.total_ms) || !TakeMilliseconds(rest, " ms, authentication=", d.fork_ms) ||
      !TakeMilliseconds(rest, " ms", d.authentication_ms)) {
    return std::nullopt;
  }
  // The message ends the line (a trailing carriage return aside).
  if (!rest.empty() && rest != "\r") return std::nullopt;
  return d;
}

SetupSummary SummarizeSetupDurations(std::span<const SetupDurations> durations) {
  std::vector<double> total, fork, authentication;
  for (const SetupDurations& d : durations) {
    total.push_back(d.total_ms);
    fork.push_back(d.fork_ms);
    authentication.push_back(d.authentication_ms);
  }
  return {Summarize(std::move(total)), Summarize(std::move(fork)), Summarize(std::move(authentication))};
}

}  // namespace backendlab::pgreal
