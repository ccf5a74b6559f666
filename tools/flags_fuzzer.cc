// libFuzzer target: Flags::Parse and its typed getters on an argument list
// made of the input's NUL-separated pieces, against a fixed set of specs.
// Beyond not crashing: a parse that succeeds accepted only known flags, each
// given at most once, a list read back has no empty item, and a list of
// numbers holds each number once, in range.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "base/check.h"
#include "tools/flags.h"

namespace {

using backendlab::tools::Flags;
using backendlab::tools::FlagSpec;

constexpr FlagSpec kSpecs[] = {
    {"layouts", "array,hash", "a list with a default"},
    {"connections", "", "a number without a default"},
    {"perf", "off", "an on/off flag"},
    {"json", "", "a path"},
};

bool Known(std::string_view name) {
  for (const FlagSpec& spec : kSpecs) {
    if (spec.name == name) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  if (!text.empty()) args = absl::StrSplit(absl::string_view(text.data(), text.size()), '\0');
  const absl::StatusOr<Flags> flags = Flags::Parse(args, kSpecs);
  if (!flags.ok()) return 0;

  std::set<std::string> names;
  for (const std::string& arg : args) {
    BACKENDLAB_CHECK(arg.starts_with("--"));
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    BACKENDLAB_CHECK(Known(name));                  // never an unknown flag
    BACKENDLAB_CHECK(names.insert(name).second);    // never one given twice
    BACKENDLAB_CHECK(flags->Has(name));
  }
  for (const FlagSpec& spec : kSpecs) {
    if (!flags->Has(spec.name)) continue;
    const absl::StatusOr<std::vector<std::string>> list = flags->GetList(spec.name);
    if (list.ok()) {
      BACKENDLAB_CHECK(!list->empty());
      for (const std::string& item : *list) BACKENDLAB_CHECK(!item.empty() && item.find(',') == std::string::npos);
    }
    const absl::StatusOr<bool> on = flags->GetBool(spec.name);
    if (on.ok()) BACKENDLAB_CHECK(flags->Get(spec.name) == (*on ? "on" : "off"));
    const absl::StatusOr<int64_t> n = flags->GetInt(spec.name, -5, 1000);
    if (n.ok()) BACKENDLAB_CHECK(*n >= -5 && *n <= 1000);
    const absl::StatusOr<std::vector<int64_t>> numbers = flags->GetIntList(spec.name, -5, 1000);
    if (numbers.ok()) {
      BACKENDLAB_CHECK(!numbers->empty());
      std::set<int64_t> distinct;
      for (int64_t v : *numbers) {
        BACKENDLAB_CHECK(v >= -5 && v <= 1000);
        BACKENDLAB_CHECK(distinct.insert(v).second);  // never the same number twice
      }
    }
  }
  return 0;
}
