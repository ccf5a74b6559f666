// Symbolization of sampled addresses and folding of samples into stacks.
#include "profiling/symbolizer.h"

#include <dlfcn.h>

#include <vector>

#include "absl/debugging/symbolize.h"
#include "absl/strings/str_cat.h"

namespace backendlab::profiling {
namespace {

// The ELF symbolizer reads /proc/self/maps and the objects themselves; its
// argument only matters on platforms without /proc.
void InitializeOnce() {
  static const bool initialized = [] {
    absl::InitializeSymbolizer("/proc/self/exe");
    return true;
  }();
  (void)initialized;
}

std::string Resolve(uintptr_t pc) {
  char name[4096];
  if (absl::Symbolize(reinterpret_cast<const void*>(pc), name, sizeof name)) return ShortFunctionName(name);
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(pc), &info) != 0) {
    if (info.dli_sname != nullptr) return ShortFunctionName(info.dli_sname);
    if (info.dli_fname != nullptr) {
      std::string_view object = info.dli_fname;
      object = object.substr(object.rfind('/') + 1);
      return absl::StrCat("[", std::string(object), "]");
    }
  }
  return "[unknown]";
}

// The index just past the bracketed group that opens at s[open].
size_t SkipGroup(std::string_view s, size_t open) {
  const char opening = s[open];
  const char closing = opening == '<' ? '>' : ')';
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == opening) ++depth;
    if (s[i] == closing && --depth == 0) return i + 1;
  }
  return s.size();
}

}  // namespace

std::string ShortFunctionName(std::string_view demangled) {
  if (demangled.empty() || demangled.front() == '[') return std::string(demangled);
  std::string out;
  size_t i = 0;
  while (i < demangled.size()) {
    const char c = demangled[i];
    // "operator<" and friends keep their '<'; an "(anonymous namespace)" is
    // part of the name; any other '(' opens the parameter list, the end.
    if (c == '<' && !(out.size() >= 8 && out.ends_with("operator"))) {
      i = SkipGroup(demangled, i);
    } else if (c == '(' && demangled.substr(i).starts_with("(anonymous namespace)")) {
      out += "(anonymous namespace)";
      i += 21;
    } else if (c == '(' && !out.empty()) {
      break;
    } else {
      out += c;
      ++i;
    }
  }
  return out.empty() ? std::string(demangled) : out;
}

Symbolizer::Symbolizer() { InitializeOnce(); }

const std::string& Symbolizer::Name(uintptr_t pc, bool return_address) {
  const uintptr_t lookup = return_address && pc > 0 ? pc - 1 : pc;
  auto [it, inserted] = cache_.try_emplace(lookup);
  if (inserted) it->second = Resolve(lookup);
  return it->second;
}

FoldedStacks FoldSamples(std::span<const RawSample> samples, Symbolizer& symbolizer, const FoldOptions& options) {
  FoldedStacks folded;
  std::vector<std::string> frames;
  for (const RawSample& s : samples) {
    if (options.keep && !options.keep(s)) continue;
    frames.clear();
    if (options.prefix) frames = options.prefix(s);
    for (int i = s.depth - 1; i >= 0; --i) frames.push_back(symbolizer.Name(s.pcs[i], i > 0));
    if (frames.empty()) frames.push_back("[unknown]");
    folded.Add(frames, 1);
  }
  return folded;
}

}  // namespace backendlab::profiling
