// `backendlab diff A.folded B.folded`: a differential profile of two folded
// files, per connection or per second of CPU.
#include "tools/diff_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/interrupt.h"
#include "base/unique_fd.h"
#include "profiling/folded_diff.h"
#include "tools/diff_report.h"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kDiffFlags[] = {
    {"out", "backendlab-diff", "directory for diff.folded (stack A B) and diff.svg (the differential flame graph)"},
    {"connections", "", "A,B: the connections each profile covers; values are then per connection"},
    {"frequency", "", "with --connections: samples per second of CPU both were taken at (the sampler's --frequency, perf's -F); values are then us per connection"},
    {"names", "", "A,B: what to call the two profiles (default: their file names)"},
    {"json", "", "also write the summary as JSON to this file"},
};

// The files --out gets, which no other output may name.
constexpr std::string_view kOutFiles[] = {"diff.folded", "diff.svg"};

absl::Status ReadError(const std::string& path, int error) {
  return absl::InvalidArgumentError(absl::StrCat("cannot read ", Quoted(path), ": ", std::strerror(error)));
}

// A reading error of the file's text, naming the file.
absl::Status InFile(const std::string& path, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat(Quoted(path), ": ", s.message()));
}

absl::StatusOr<profiling::FoldedStacks> ReadFolded(const std::string& path) {
  // By read(2), a block at a time: a file or a pipe (<(...)) alike, in
  // memory bounded by its distinct stacks, not its size (FoldedStacksReader);
  // a directory is refused. A stop request ends it at once, also while a
  // read or a pipe's open waits (they return EINTR: base/interrupt.h).
  const UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno == EINTR && StopRequested() ? StoppedWriting({}) : ReadError(path, errno);
  profiling::FoldedStacksReader reader;
  char buf[1 << 16];
  for (;;) {
    if (StopRequested()) return StoppedWriting({});
    const ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError(path, errno);
    }
    if (absl::Status s = reader.Read(std::string_view(buf, static_cast<size_t>(n))); !s.ok()) return InFile(path, s);
  }
  absl::StatusOr<profiling::FoldedStacks> stacks = std::move(reader).Finish();
  if (!stacks.ok()) return InFile(path, stacks.status());
  return stacks;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string DiffUsage() {
  return absl::StrCat(
      "usage: backendlab diff A.folded B.folded [flags]\n"
      "Two folded profiles of one workload, B set against A: a folded diff, a differential flame graph\n"
      "(red: grew, blue: shrank) and the functions that grew and shrank most. Values are per second of\n"
      "sampled CPU (each profile's samples over its total), or per connection with --connections.\n\n",
      FlagsHelp(kDiffFlags));
}

namespace {

// The command, saying in `doing` what it is at (for an allocation that fails).
absl::Status RunDiff(std::span<const std::string> args, std::ostream& out, std::string& doing) {
  std::vector<std::string> files, flag_args;
  for (const std::string& a : args) (a.rfind("--", 0) == 0 ? flag_args : files).push_back(a);
  if (files.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("give two folded files, A and B (", files.size(), " given)"));
  }
  absl::StatusOr<Flags> flags = Flags::Parse(flag_args, kDiffFlags);
  if (!flags.ok()) return flags.status();
  std::vector<std::string> names = {BaseName(files[0]), BaseName(files[1])};
  if (flags->Has("names")) {
    absl::StatusOr<std::vector<std::string>> given = flags->GetList("names");
    if (!given.ok()) return given.status();
    if (given->size() != 2) return absl::InvalidArgumentError("--names takes two names, A,B");
    names = *given;
  }
  std::vector<int64_t> connections;
  if (flags->Has("connections")) {
    // Two profiles may cover as many connections: not a list of distinct items.
    const std::vector<std::string> parts = absl::StrSplit(flags->Get("connections"), ',');
    int64_t n[2] = {0, 0};
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &n[0]) || !absl::SimpleAtoi(parts[1], &n[1]) || n[0] < 1 ||
        n[1] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--connections: ", Quoted(flags->Get("connections")), " is not two counts A,B (each >= 1)"));
    }
    connections = {n[0], n[1]};
  }
  double frequency = 0;
  if (flags->Has("frequency")) {
    if (connections.empty()) return absl::InvalidArgumentError("--frequency goes with --connections");
    absl::StatusOr<int64_t> hz = flags->GetInt("frequency", 1, 100'000);
    if (!hz.ok()) return hz.status();
    frequency = static_cast<double>(*hz);
  }
  if (absl::Status s = CheckOutputPaths(*flags, flags->Get("out"), kOutFiles); !s.ok()) return s;
  doing = absl::StrCat("reading ", Quoted(files[0]));
  absl::StatusOr<profiling::FoldedStacks> a = ReadFolded(files[0]);
  if (!a.ok()) return a.status();
  doing = absl::StrCat("reading ", Quoted(files[1]));
  absl::StatusOr<profiling::FoldedStacks> b = ReadFolded(files[1]);
  if (!b.ok()) return b.status();

  // What one sample of each is worth.
  std::string unit;
  double a_per = 0, b_per = 0;
  if (connections.empty()) {
    unit = "ms per second of sampled CPU";
    a_per = a->total_samples() > 0 ? 1000.0 / static_cast<double>(a->total_samples()) : 0;
    b_per = b->total_samples() > 0 ? 1000.0 / static_cast<double>(b->total_samples()) : 0;
  } else if (frequency > 0) {
    unit = "us per connection";
    a_per = 1e6 / frequency / static_cast<double>(connections[0]);
    b_per = 1e6 / frequency / static_cast<double>(connections[1]);
  } else {
    unit = "samples per connection";
    a_per = 1.0 / static_cast<double>(connections[0]);
    b_per = 1.0 / static_cast<double>(connections[1]);
  }
  doing = "setting B against A";
  const std::optional<profiling::FoldedDiff> diff =
      profiling::FoldedDiff::Of({&*a, a_per, names[0]}, {&*b, b_per, names[1]}, unit, &StopRequested);
  if (!diff) return StoppedWriting({});

  doing = "drawing and writing the diff";
  const std::string dir = flags->Get("out");
  std::error_code ec;
  const bool existed = std::filesystem::exists(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot create ", Quoted(dir), ": ", ec.message()));
  std::vector<std::string> written;
  const std::string title = absl::StrCat(names[1], " against ", names[0]);
  if (absl::Status s = WriteDiff(dir, "diff", title, *diff, written, nullptr, &StopRequested); !s.ok()) {
    if (written.empty() && !existed) rmdir(dir.c_str());  // made for the files, and none came
    return s;
  }
  if (StopRequested()) return StoppedWriting(written);
  out << absl::StrFormat("backendlab diff: B %s (%d samples) against A %s (%d samples)\n", OneLine(files[1]),
                         b->total_samples(), OneLine(files[0]), a->total_samples());
  for (const auto& [side, stacks] : {std::pair{"A", &*a}, std::pair{"B", &*b}}) {
    if (stacks->total_samples() == 0) out << side << " has no samples: its side of the diff is empty\n";
  }
  if (const int depth = profiling::FlameGraphOptions{}.max_depth; diff->deepest() > static_cast<size_t>(depth)) {
    out << absl::StrFormat("%s draws stacks to a depth of %d frames; the deepest here has %d (%s has every frame)\n",
                           OneLine(written[1]), depth, diff->deepest(), OneLine(written[0]));
  }
  PrintDiffTop(*diff, out);
  out << "files: " << OneLine(written[0]) << " (stack A B, FlameGraph's difffolded format), " << OneLine(written[1])
      << "\n";
  if (flags->Has("json")) {
    if (StopRequested()) return StoppedWriting(written);
    nlohmann::json j = MachineHeader();
    j["schema_version"] = kJsonSchemaVersion;
    j["command"] = "diff";
    j["files"] = files;
    j["samples"] = {a->total_samples(), b->total_samples()};
    j["diff"] = DiffJson(*diff);
    if (absl::Status s = WriteTextFile(flags->Get("json"), j.dump(2) + "\n"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunDiffCommand(std::span<const std::string> args, std::ostream& out) {
  // Memory that runs out (a pipe of endless distinct stacks) is a failed
  // run in one line, not an abort: what was allocated is freed on the way.
  std::string doing = "reading the flags";
  try {
    return RunDiff(args, out, doing);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory ", doing));
  }
}

}  // namespace backendlab::tools
