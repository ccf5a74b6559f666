// Names for the addresses in stack samples, resolved after the run.
#ifndef BACKENDLAB_PROFILING_SYMBOLIZER_H_
#define BACKENDLAB_PROFILING_SYMBOLIZER_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profiling/folded_stacks.h"
#include "profiling/sampler.h"

namespace backendlab::profiling {

// Names the frames of samples, whichever address space they were taken in.
class FrameSymbolizer {
 public:
  virtual ~FrameSymbolizer() = default;

  // The function containing `pc`. A return address (a frame other than the
  // leaf) is looked up at pc - 1, so that a call at the end of a function is
  // charged to it and not to the next one. Without a symbol: "[object]" (the
  // file name, as perf names an unknown frame by its dso), or "[unknown]".
  // Results are cached.
  const std::string& Name(uintptr_t pc, bool return_address);

 protected:
  // The name of the function that contains `pc` (already moved back for a
  // return address), short (ShortFunctionName), or a bracketed object name.
  virtual std::string Resolve(uintptr_t pc) = 0;

 private:
  std::unordered_map<uintptr_t, std::string> cache_;
};

// Resolves addresses of the calling process's address space. Samples of
// processes forked from it without exec (backends, the postmaster) have the
// same mappings, PIE or not, so they are resolved here, after the run. Uses
// Abseil's ELF symbolizer (the full symbol table, static functions included;
// names demangled without parameters), then dladdr for dynamic symbols.
// Another process's addresses: ProcessSymbolizer (process_symbolizer.h).
class Symbolizer final : public FrameSymbolizer {
 public:
  Symbolizer();

 protected:
  std::string Resolve(uintptr_t pc) override;
};

// "ns::(anonymous namespace)::F<int>(int) const" -> "ns::(anonymous namespace)::F":
// drops template arguments, the parameter list and qualifiers after it, and a
// symbol version ("@GLIBC_2.2.5"); keeps operators ("operator<<", "operator()")
// and names lambdas "{lambda}" ("F()::{lambda(int)#1}::operator()" ->
// "F::{lambda}::operator()"), so that the sampler's names (Abseil's demangler)
// and perf's (full demangling) compare equal. Text in brackets, e.g.
// "[unknown]", is returned unchanged.
std::string ShortFunctionName(std::string_view demangled);

// The frame name of a pc in `object` without a symbol: the file name in
// brackets ("/usr/lib/libc.so.6" -> "[libc.so.6]"), as perf names such a frame
// by its dso; "[unknown]" for no object; a bracketed name ("[vdso]") as it is.
std::string ObjectFrameName(std::string_view object);

// Appends the names of `sample`'s frames to `frames`, root first.
void AppendFrames(const RawSample& sample, FrameSymbolizer& symbolizer, std::vector<std::string>& frames);

// Folds samples into stacks, root first, one count per sample. `keep`
// (if set) filters samples; `prefix` (if set) gives frames to put above a
// sample's own, outermost first: its process's role, its phase.
struct FoldOptions {
  std::function<bool(const RawSample&)> keep;
  std::function<std::vector<std::string>(const RawSample&)> prefix;
};
FoldedStacks FoldSamples(std::span<const RawSample> samples, FrameSymbolizer& symbolizer, const FoldOptions& options);

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_SYMBOLIZER_H_
