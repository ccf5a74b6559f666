// Folding `perf script` samples into stacks, written from the output format.
#include "profiling/perf_script.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "profiling/internal/text.h"
#include "profiling/symbolizer.h"

namespace backendlab::profiling {
namespace {

using internal::IsSpace;
using internal::TakeLine;
using internal::Trim;
using internal::TrimRight;


bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsHexDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

// A pid as perf prints it, "%d": digits, or -1 for a record of no task
// (perf's comm is then ":-1").
bool IsPid(std::string_view s) { return IsDigits(s) || s == "-1"; }

// "pid" or "pid/tid".
bool IsPidToken(std::string_view token) {
  size_t slash = token.find('/');
  if (slash == std::string_view::npos) return IsPid(token);
  return IsPid(token.substr(0, slash)) && IsPid(token.substr(slash + 1));
}

struct Header {
  std::string comm;
  int64_t pid = -1;
  int64_t tid = -1;
  std::string_view rest;  // after the pid token: "TIME: EVENT: ..."
};

// Decimal digits as a number, saturated at INT64_MAX (no pid or count is
// that large; a corrupt line must not overflow).
int64_t ToInt(std::string_view digits) {
  if (digits == "-1") return -1;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t value = 0;
  for (char c : digits) {
    const int d = c - '0';
    if (value > (kMax - d) / 10) return kMax;
    value = value * 10 + d;
  }
  return value;
}

// The comm, pid and tid of a header line: the comm is everything before the
// first pid token, since a comm may itself contain spaces ("Web Content").
std::optional<Header> HeaderOf(std::string_view header) {
  size_t pos = 0;
  while (pos < header.size()) {
    while (pos < header.size() && IsSpace(header[pos])) ++pos;
    size_t end = pos;
    while (end < header.size() && !IsSpace(header[end])) ++end;
    const std::string_view token = header.substr(pos, end - pos);
    if (pos > 0 && IsPidToken(token)) {
      Header h;
      h.comm = std::string(Trim(header.substr(0, pos)));
      std::replace(h.comm.begin(), h.comm.end(), ' ', '_');
      std::replace(h.comm.begin(), h.comm.end(), '\t', '_');
      const size_t slash = token.find('/');
      h.pid = ToInt(token.substr(0, slash));
      h.tid = slash == std::string_view::npos ? h.pid : ToInt(token.substr(slash + 1));
      h.rest = header.substr(end);
      return h;
    }
    pos = end;
  }
  return std::nullopt;
}

// A header line that starts with spaces: not a tab, a comm before the pid
// token, and a "TIME:" after it (a frame's first token is its address).
bool IsIndentedHeader(std::string_view line) {
  if (line.front() == '\t') return false;
  const std::optional<Header> header = HeaderOf(line);
  return header.has_value() && !header->comm.empty() && header->rest.find(':') != std::string_view::npos;
}

// The "SECONDS.FRACTION:" token of a header's rest, after the "[CPU]"
// token perf prints for a system-wide recording; 0 without one.
double TimeOf(std::string_view rest) {
  rest = Trim(rest);
  if (rest.starts_with('[')) {
    const size_t close = rest.find(']');
    if (close != std::string_view::npos) rest = Trim(rest.substr(close + 1));
  }
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return 0;
  const std::string token(rest.substr(0, colon));
  char* end = nullptr;
  const double seconds = std::strtod(token.c_str(), &end);
  return end == token.c_str() + token.size() ? seconds : 0;
}

// "A:B" -> {A, B}, both decimal.
std::optional<std::pair<int64_t, int64_t>> IdPair(std::string_view s, char separator) {
  const size_t sep = s.find(separator);
  if (sep == std::string_view::npos || !IsDigits(s.substr(0, sep)) || !IsDigits(s.substr(sep + 1))) {
    return std::nullopt;
  }
  return std::make_pair(ToInt(s.substr(0, sep)), ToInt(s.substr(sep + 1)));
}

// The task record in a header's rest, if it holds one: nullopt for a
// sample; an event with pid -1 for a PERF_RECORD_ this reader skips;
// InvalidArgument for a malformed FORK, EXIT or COMM record.
absl::StatusOr<std::optional<PerfTaskEvent>> TaskRecordOf(std::string_view rest) {
  constexpr std::string_view kRecord = "PERF_RECORD_";
  const size_t at = rest.find(kRecord);
  if (at == std::string_view::npos) return std::optional<PerfTaskEvent>();
  std::string_view record = TrimRight(rest.substr(at + kRecord.size()));
  PerfTaskEvent event;
  const absl::Status malformed = absl::InvalidArgumentError("malformed task record");
  if (record.starts_with("FORK(") || record.starts_with("EXIT(")) {
    event.kind = record.starts_with("FORK(") ? PerfTaskEvent::Kind::kFork : PerfTaskEvent::Kind::kExit;
    // "FORK(PID:TID):(PPID:PTID)"
    const size_t close1 = record.find(')');
    const size_t open2 = record.find('(', close1 == std::string_view::npos ? record.size() : close1);
    const size_t close2 = record.find(')', open2 == std::string_view::npos ? record.size() : open2);
    if (close1 == std::string_view::npos || open2 == std::string_view::npos || close2 == std::string_view::npos) {
      return malformed;
    }
    const auto self = IdPair(record.substr(5, close1 - 5), ':');
    const auto parent = IdPair(record.substr(open2 + 1, close2 - open2 - 1), ':');
    if (!self || !parent) return malformed;
    std::tie(event.pid, event.tid) = *self;
    std::tie(event.parent_pid, event.parent_tid) = *parent;
    return std::optional<PerfTaskEvent>(event);
  }
  if (record.starts_with("COMM")) {
    // "COMM: NAME:PID/TID" or "COMM exec: NAME:PID/TID"; NAME may hold ':'.
    const size_t colon = record.find(": ");
    const size_t last = record.rfind(':');
    if (colon == std::string_view::npos || last == std::string_view::npos || last <= colon + 1) return malformed;
    const auto ids = IdPair(record.substr(last + 1), '/');
    if (!ids) return malformed;
    event.kind = PerfTaskEvent::Kind::kComm;
    std::tie(event.pid, event.tid) = *ids;
    event.comm = std::string(record.substr(colon + 2, last - colon - 2));
    return std::optional<PerfTaskEvent>(event);
  }
  if (record.starts_with("LOST")) {
    // "LOST lost N" or "LOST_SAMPLES lost N"
    const size_t at_lost = record.rfind("lost ");
    if (at_lost == std::string_view::npos || !IsDigits(Trim(record.substr(at_lost + 5)))) return malformed;
    event.kind = PerfTaskEvent::Kind::kLost;
    event.pid = 0;
    event.lost = ToInt(Trim(record.substr(at_lost + 5)));
    return std::optional<PerfTaskEvent>(event);
  }
  event.pid = -1;  // another record (MMAP, ...): neither a sample nor a task event
  return std::optional<PerfTaskEvent>(event);
}

// "perf script line N: WHAT: \"LINE\"", the line escaped and cut at 120
// bytes: what perf printed that this reader does not know.
absl::Status LineError(size_t line_number, const std::string& what, std::string_view line) {
  constexpr size_t kQuoted = 120;
  return absl::InvalidArgumentError(absl::StrCat("perf script line ", line_number, ": ", what, ": \"",
                                                 absl::CEscape(std::string(line.substr(0, kQuoted))),
                                                 line.size() > kQuoted ? "...\"" : "\""));
}

struct Frame {
  std::string symbol;
  bool kernel = false;
};

// "addr symbol+0xoff (dso)" -> "symbol", and whether it is the kernel's.
Frame FrameOf(std::string_view frame_line) {
  std::string_view rest = Trim(frame_line);
  const size_t space = rest.find_first_of(" \t");
  const std::string_view address = rest.substr(0, space);
  Frame frame;
  frame.kernel = address.size() == 16 && address.starts_with("ffff");
  if (space == std::string_view::npos) {  // an address alone
    frame.symbol = "[unknown]";
    return frame;
  }
  rest = Trim(rest.substr(space + 1));
  // The dso is the last parenthesised group; demangled symbols may hold
  // parentheses of their own, so search from the end.
  std::string_view dso;
  if (!rest.empty() && rest.back() == ')') {
    // "(anonymous namespace)::F+0x1d (/bin/x)" starts with '(' too: only a
    // line with no " (" is a dso alone.
    size_t open = rest.rfind(" (");
    if (open == std::string_view::npos && rest.front() == '(') open = 0;
    if (open != std::string_view::npos) {
      const size_t dso_start = open == 0 ? 1 : open + 2;
      dso = rest.substr(dso_start, rest.size() - dso_start - 1);
      rest = open == 0 ? std::string_view() : Trim(rest.substr(0, open));
    }
  }
  frame.kernel |= dso.starts_with("[kernel");
  const size_t plus = rest.rfind("+0x");
  if (plus != std::string_view::npos && IsHexDigits(rest.substr(plus + 3))) rest = rest.substr(0, plus);
  // No symbol: name the frame by its object.
  frame.symbol = rest.empty() || rest == "[unknown]" ? ObjectFrameName(dso) : std::string(rest);
  return frame;
}

}  // namespace

absl::Status ForEachPerfScriptRecord(std::string_view text, const PerfScriptOptions& options,
                                     const std::function<void(PerfScriptSample&&)>& on_sample,
                                     const std::function<void(const PerfTaskEvent&)>& on_task) {
  std::optional<PerfScriptSample> sample;  // set while inside a sample
  std::vector<std::string> leaf_first;
  bool user_seen = false;  // a user frame came: later kernel frames are not at the leaf end
  auto finish_sample = [&] {
    if (!sample.has_value()) return;
    sample->frames.assign(leaf_first.rbegin(), leaf_first.rend());
    user_seen = false;
    if (on_sample) on_sample(std::move(*sample));
    sample.reset();
    leaf_first.clear();
  };
  bool in_record = false;  // frame lines after a task record belong to no sample

  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::string_view line = TakeLine(text);

    if (Trim(line).empty()) {
      finish_sample();
      in_record = false;
      continue;
    }
    if (line.front() == '#') continue;
    // Frames are indented (a tab, as perf prints them). A header is indented
    // too when perf right-aligns its comm (records of an event without call
    // chains: "%16s"); it has a comm, then a pid token, then "TIME: EVENT".
    if (IsSpace(line.front()) && !IsIndentedHeader(line)) {
      if (in_record) continue;
      if (!sample.has_value()) {
        return LineError(line_number, "frame line outside a sample", line);
      }
      Frame frame = FrameOf(line);
      if (options.drop_kernel_frames && frame.kernel) continue;
      if (frame.kernel && !user_seen) ++sample->kernel_frames;
      user_seen |= !frame.kernel;
      leaf_first.push_back(options.short_names ? ShortFunctionName(frame.symbol) : std::move(frame.symbol));
      continue;
    }
    // A header directly after another sample's frames (no blank line) starts
    // a new sample all the same.
    finish_sample();
    in_record = false;
    std::optional<Header> header = HeaderOf(line);
    if (!header.has_value() || header->comm.empty()) {
      return LineError(line_number, "sample header without a pid", line);
    }
    absl::StatusOr<std::optional<PerfTaskEvent>> task = TaskRecordOf(header->rest);
    if (!task.ok()) {
      return LineError(line_number, std::string(task.status().message()), line);
    }
    if (task->has_value()) {
      in_record = true;
      (*task)->time = TimeOf(header->rest);
      if ((*task)->pid >= 0 && on_task) on_task(**task);
      continue;
    }
    sample.emplace();
    sample->time = TimeOf(header->rest);
    sample->comm = std::move(header->comm);
    sample->pid = header->pid;
    sample->tid = header->tid;
  }
  finish_sample();
  return absl::OkStatus();
}

absl::Status PerfOutputNotUnderstood(const absl::Status& status) {
  return absl::InternalError(absl::StrCat("perf script's output not understood: ", status.message()));
}

absl::StatusOr<FoldedStacks> ParsePerfScript(std::string_view text, const PerfScriptOptions& options) {
  FoldedStacks result;
  std::vector<std::string> root_first;
  absl::Status status = ForEachPerfScriptRecord(
      text, options,
      [&](PerfScriptSample&& sample) {
        root_first.clear();
        root_first.push_back(std::move(sample.comm));
        for (std::string& f : sample.frames) root_first.push_back(std::move(f));
        result.Add(root_first, 1);
      },
      nullptr);
  if (!status.ok()) return status;
  return result;
}

}  // namespace backendlab::profiling
