// --name=value parsing with known-flag checks.
#include "tools/flags.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace backendlab::tools {

std::string Quoted(std::string_view text) { return absl::StrCat("'", absl::CEscape(std::string(text)), "'"); }

std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", u);
    }
  }
  return out;
}

namespace {

// The option fields the modules' messages name, each set by the flag of the
// same words ("what_if" by --what-if): the one map from a module's words to
// the command line's.
constexpr std::string_view kFlagFields[] = {
    "aa", "backend_profile", "bindir", "clients", "conninfo", "connections", "cpus",     "duration", "fit_rounds", "hold",
    "iterations",      "kill_backend", "mode",     "pairs",       "pg_versions", "pgbouncer", "pool", "postmaster_pid",
    "profile",         "queries",     "query",     "readers",     "reap",     "rounds",   "run_as",       "set",
    "shared_buffers",  "ssl",         "tcp",       "thread_memory", "via",    "warmup",       "what_if",
    "workers",
};

}  // namespace

std::string InFlagWords(std::string_view message) {
  std::string out;
  size_t at = 0;
  while (at < message.size()) {
    const size_t open = message.find('`', at);
    const size_t close = open == std::string_view::npos ? open : message.find('`', open + 1);
    if (close == std::string_view::npos) break;
    const std::string_view word = message.substr(open + 1, close - open - 1);
    out.append(message.substr(at, open - at));
    if (std::find(std::begin(kFlagFields), std::end(kFlagFields), word) != std::end(kFlagFields)) {
      std::string flag(word);
      std::replace(flag.begin(), flag.end(), '_', '-');
      absl::StrAppend(&out, "--", flag);
    } else {
      out.append(message.substr(open, close - open + 1));
    }
    at = close + 1;
  }
  out.append(message.substr(std::min(at, message.size())));
  return out;
}

namespace {

std::string FlagName(std::string_view name) { return Quoted("--" + std::string(name)); }

}  // namespace

absl::StatusOr<Flags> Flags::Parse(std::span<const std::string> args, std::span<const FlagSpec> specs) {
  Flags flags;
  for (const FlagSpec& spec : specs) {
    if (!spec.default_value.empty()) flags.values_[std::string(spec.name)] = spec.default_value;
  }
  std::map<std::string, bool, std::less<>> seen;
  for (const std::string& arg : args) {
    if (arg.rfind("--", 0) != 0) return absl::InvalidArgumentError(absl::StrCat("unexpected argument ", Quoted(arg)));
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    bool known = false;
    for (const FlagSpec& spec : specs) known |= spec.name == name;
    if (!known) return absl::InvalidArgumentError(absl::StrCat("unknown flag ", FlagName(name), " (see --help)"));
    if (eq == std::string::npos) {
      // An on/off flag given alone is on: `--perf` for `--perf=on`.
      const bool on_off = std::any_of(specs.begin(), specs.end(),
                                      [&](const FlagSpec& s) { return s.name == name && s.default_value == "off"; });
      if (!on_off) return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), " needs a value (--", absl::CEscape(name), "=...)"));
      if (seen[name]) return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), " given twice"));
      seen[name] = true;
      flags.given_.insert(name);
      flags.values_[name] = "on";
      continue;
    }
    if (seen[name]) return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), " given twice"));
    seen[name] = true;
    flags.given_.insert(name);
    std::string value = arg.substr(eq + 1);
    if (value.empty()) return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), " has an empty value"));
    flags.values_[name] = std::move(value);
  }
  return flags;
}

std::string Flags::Get(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::string() : it->second;
}

absl::StatusOr<std::vector<std::string>> Flags::GetList(std::string_view name) const {
  std::vector<std::string> items = absl::StrSplit(Get(name), ',');
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty()) return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), " has an empty list item"));
    // A repeated entry would be measured, and reported, twice.
    if (std::find(items.begin(), items.begin() + static_cast<ptrdiff_t>(i), items[i]) != items.begin() + static_cast<ptrdiff_t>(i)) {
      return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), " lists ", Quoted(items[i]), " twice"));
    }
  }
  return items;
}

absl::StatusOr<bool> Flags::GetBool(std::string_view name) const {
  const std::string text = Get(name);
  if (text == "on") return true;
  if (text == "off") return false;
  return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), " must be on or off, not ", Quoted(text)));
}

namespace {

// A whole number in [min, max] given to flag `name`: GetInt's and
// GetIntList's one parse and wording.
absl::StatusOr<int64_t> ParseIntIn(std::string_view name, const std::string& text, int64_t min, int64_t max) {
  // Digits, after a '-' or not: SimpleAtoi alone would take a '+' and blanks.
  const size_t digits = !text.empty() && text[0] == '-' ? 1 : 0;
  int64_t value;
  if (text.size() == digits || text.find_first_not_of("0123456789", digits) != std::string::npos ||
      !absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), ": ", Quoted(text), " is not a whole number"));
  }
  if (value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag ", FlagName(name), ": ", value, " is outside ", min, "..", max));
  }
  return value;
}

}  // namespace

absl::StatusOr<int64_t> Flags::GetInt(std::string_view name, int64_t min, int64_t max) const {
  return ParseIntIn(name, Get(name), min, max);
}

absl::StatusOr<double> Flags::GetNumber(std::string_view name, double min, double max) const {
  const std::string text = Get(name);
  double value;
  // SimpleAtod takes "nan", "inf" and hex: only plain decimals are numbers here.
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos || !absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), ": ", Quoted(text), " is not a number"));
  }
  if (value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), ": ", text, " is outside ", min, "..", max));
  }
  return value;
}

absl::StatusOr<double> Flags::GetPercent(std::string_view name, double low, double high) const {
  std::string text = Get(name);
  if (!text.empty() && text.back() == '%') text.pop_back();
  double value;
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos || !absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), ": ", Quoted(Get(name)), " is not a percentage"));
  }
  if (value <= low || value >= high) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag ", FlagName(name), ": ", Get(name), " is not strictly between ", low, " % and ", high, " %"));
  }
  return value / 100;
}

absl::StatusOr<std::vector<int64_t>> Flags::GetIntList(std::string_view name, int64_t min, int64_t max) const {
  absl::StatusOr<std::vector<std::string>> items = GetList(name);
  if (!items.ok()) return items.status();
  std::vector<int64_t> values;
  for (const std::string& item : *items) {
    absl::StatusOr<int64_t> v = ParseIntIn(name, item, min, max);
    if (!v.ok()) return v.status();
    // The same number spelled twice ("8,08") would be measured twice.
    if (std::find(values.begin(), values.end(), *v) != values.end()) {
      return absl::InvalidArgumentError(absl::StrCat("flag ", FlagName(name), " lists ", *v, " twice"));
    }
    values.push_back(*v);
  }
  return values;
}

std::string FlagsHelp(std::span<const FlagSpec> specs) {
  std::string out;
  for (const FlagSpec& spec : specs) {
    std::string left = "  --" + std::string(spec.name) + "=" +
                       (spec.default_value.empty() ? std::string("...") : std::string(spec.default_value));
    if (left.size() < 34) left.resize(34, ' ');
    out += left + " " + std::string(spec.help) + "\n";
  }
  return out;
}

absl::StatusOr<absl::Duration> ParseDuration(std::string_view text) {
  const std::string t(text);
  size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  int64_t n = 0;
  if (digits == 0 || !absl::SimpleAtoi(t.substr(0, digits), &n)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration ", Quoted(t), " (e.g. 10s, 500ms, 2m)"));
  }
  const std::string unit = t.substr(digits);
  constexpr int64_t kDayMs = 24 * 3600 * 1000;
  if (n > kDayMs) {  // checked before any multiplication can overflow
    return absl::InvalidArgumentError(absl::StrCat("invalid duration ", Quoted(t), ": must be > 0 and at most a day"));
  }
  int64_t ms;
  if (unit == "ms") {
    ms = n;
  } else if (unit == "s") {
    ms = n * 1000;
  } else if (unit == "m") {
    ms = n * 60'000;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration ", Quoted(t), ": unit must be ms, s or m"));
  }
  if (ms <= 0 || ms > kDayMs) {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration ", Quoted(t), ": must be > 0 and at most a day"));
  }
  return absl::Milliseconds(ms);
}

}  // namespace backendlab::tools
