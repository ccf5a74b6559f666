// Symbolization of sampled addresses and folding of samples into stacks.
#include "profiling/symbolizer.h"

#include <dlfcn.h>

#include <cctype>
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

std::string ResolveHere(uintptr_t pc) {
  char name[4096];
  if (absl::Symbolize(reinterpret_cast<const void*>(pc), name, sizeof name)) return ShortFunctionName(name);
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(pc), &info) != 0) {
    if (info.dli_sname != nullptr) return ShortFunctionName(info.dli_sname);
    if (info.dli_fname != nullptr) return ObjectFrameName(info.dli_fname);
  }
  return "[unknown]";
}

// The index just past the bracketed group ("<...>", "(...)" or "{...}")
// that opens at s[open].
size_t SkipGroup(std::string_view s, size_t open) {
  const char opening = s[open];
  const char closing = opening == '<' ? '>' : opening == '(' ? ')' : '}';
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == opening) ++depth;
    if (s[i] == closing && --depth == 0) return i + 1;
  }
  return s.size();
}

// Whether `out` ends with the keyword "operator" (not "my_operator").
bool EndsWithOperatorKeyword(const std::string& out) {
  if (!out.ends_with("operator")) return false;
  if (out.size() == 8) return true;
  const char before = out[out.size() - 9];
  return !(std::isalnum(static_cast<unsigned char>(before)) || before == '_');
}

}  // namespace

std::string ShortFunctionName(std::string_view demangled) {
  if (demangled.empty() || demangled.front() == '[') return std::string(demangled);
  // perf's "pthread_sigmask@GLIBC_2.2.5": the symbol version is not the name.
  demangled = demangled.substr(0, demangled.find('@'));
  std::string out;
  size_t i = 0;
  while (i < demangled.size()) {
    const char c = demangled[i];
    if (EndsWithOperatorKeyword(out)) {
      // The operator's own characters: "operator<<=", "operator()", "operator[]".
      if (demangled.substr(i).starts_with("()")) {
        out += "()";
        i += 2;
        continue;
      }
      const size_t end = demangled.find_first_not_of("<>=!+-*/%^&|~[],", i);
      const size_t stop = end == std::string_view::npos ? demangled.size() : end;
      if (stop > i) {
        out += demangled.substr(i, stop - i);
        i = stop;
        continue;
      }
    }
    if (c == '<') {
      i = SkipGroup(demangled, i);  // template arguments
    } else if (c == '{') {
      // "{lambda(int)#1}": which lambda of the function, not its signature.
      out += demangled.substr(i).starts_with("{lambda") ? "{lambda}" : "{...}";
      i = SkipGroup(demangled, i);
    } else if (c == '(' && demangled.substr(i).starts_with("(anonymous namespace)")) {
      out += "(anonymous namespace)";
      i += 21;
    } else if (c == '(' && !out.empty()) {
      // A parameter list: the end, unless a scope follows ("F()::{lambda}").
      const size_t after = SkipGroup(demangled, i);
      if (!demangled.substr(after).starts_with("::")) break;
      i = after;
    } else {
      out += c;
      ++i;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? std::string(demangled) : out;
}

std::string ObjectFrameName(std::string_view object) {
  if (object.empty()) return "[unknown]";
  if (object.front() == '[') return std::string(object);
  return absl::StrCat("[", std::string(object.substr(object.rfind('/') + 1)), "]");
}

const std::string& FrameSymbolizer::Name(uintptr_t pc, bool return_address) {
  const uintptr_t lookup = return_address && pc > 0 ? pc - 1 : pc;
  auto [it, inserted] = cache_.try_emplace(lookup);
  if (inserted) it->second = Resolve(lookup);
  return it->second;
}

Symbolizer::Symbolizer() { InitializeOnce(); }

std::string Symbolizer::Resolve(uintptr_t pc) { return ResolveHere(pc); }

void AppendFrames(const RawSample& sample, FrameSymbolizer& symbolizer, std::vector<std::string>& frames) {
  for (int i = sample.depth - 1; i >= 0; --i) frames.push_back(symbolizer.Name(sample.pcs[i], i > 0));
}

FoldedStacks FoldSamples(std::span<const RawSample> samples, FrameSymbolizer& symbolizer, const FoldOptions& options) {
  FoldedStacks folded;
  std::vector<std::string> frames;
  for (const RawSample& s : samples) {
    if (options.keep && !options.keep(s)) continue;
    frames.clear();
    if (options.prefix) frames = options.prefix(s);
    AppendFrames(s, symbolizer, frames);
    if (frames.empty()) frames.push_back("[unknown]");
    folded.Add(frames, 1);
  }
  return folded;
}

}  // namespace backendlab::profiling
