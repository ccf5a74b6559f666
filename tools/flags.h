// Command-line flags of the form --name=value, checked against a list of known
// flags so a typo is a usage error, never silently ignored.
#ifndef BACKENDLAB_TOOLS_FLAGS_H_
#define BACKENDLAB_TOOLS_FLAGS_H_

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace backendlab::tools {

struct FlagSpec {
  std::string_view name;           // without the leading "--"
  std::string_view default_value;  // "" = no value unless given
  std::string_view help;
};

class Flags {
 public:
  // Every error is InvalidArgument (a usage error: exit 2) naming the flag.
  // A flag whose default is "off" may be given alone, meaning "on".
  static absl::StatusOr<Flags> Parse(std::span<const std::string> args, std::span<const FlagSpec> specs);

  // A value, given or by default.
  bool Has(std::string_view name) const { return values_.contains(std::string(name)); }
  // Given on the command line, whatever its default.
  bool Given(std::string_view name) const { return given_.contains(std::string(name)); }
  std::string Get(std::string_view name) const;
  // A comma-separated list; an empty or a repeated item is an error.
  absl::StatusOr<std::vector<std::string>> GetList(std::string_view name) const;
  // An on/off flag (default "off"; given alone it is "on"): the one boolean
  // spelling of every command.
  absl::StatusOr<bool> GetBool(std::string_view name) const;
  // A whole number in [min, max].
  absl::StatusOr<int64_t> GetInt(std::string_view name, int64_t min, int64_t max) const;
  // A plain decimal number ("2", "0.5") in [min, max].
  // A percentage strictly between `low` and `high` ("2" or "2%"), as a
  // fraction (0.02).
  absl::StatusOr<double> GetPercent(std::string_view name, double low, double high) const;
  absl::StatusOr<double> GetNumber(std::string_view name, double min, double max) const;
  // A comma-separated list of whole numbers, each in [min, max]; an empty
  // item or the same number twice is an error.
  absl::StatusOr<std::vector<int64_t>> GetIntList(std::string_view name, int64_t min, int64_t max) const;

 private:
  std::map<std::string, std::string, std::less<>> values_;
  std::set<std::string, std::less<>> given_;
};

// `text` in single quotes with control characters, quotes and backslashes
// escaped as in C ("a\nb" -> 'a\\nb'): how every error quotes user input, so
// that it stays one line whatever the user typed.
std::string Quoted(std::string_view text);

// A module's message in flag words: the modules word a check in their
// options' field names, in backquotes ("`clients` must be 1..1024",
// "`what_if`=huge-pages: ..."); here each field a flag sets becomes that
// flag ("--clients must be 1..1024", "--what-if=huge-pages: ..."). Other
// backquoted words (a phase's, a shell command's) stay as they are.
std::string InFlagWords(std::string_view message);

// "10s", "500ms", "2m", more than 0 and at most a day; InvalidArgument
// otherwise.
absl::StatusOr<absl::Duration> ParseDuration(std::string_view text);

// `text` with control characters escaped (a newline as \n, a tab as \t,
// others as \xNN; the rest, UTF-8 too, as it is): an error that quotes user
// input stays one line whichever module worded it, and what is printed of
// an input's text (a frame name) cannot drive the terminal.
std::string OneLine(std::string_view text);

// "  --name=DEFAULT  help" lines for a command's usage text.
std::string FlagsHelp(std::span<const FlagSpec> specs);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_FLAGS_H_
