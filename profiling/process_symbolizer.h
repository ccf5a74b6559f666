// Names for the addresses of samples taken in another process (a real
// server's postmaster and the backends it forked), from that process's
// mappings and the symbol tables of the files mapped there.
#ifndef BACKENDLAB_PROFILING_PROCESS_SYMBOLIZER_H_
#define BACKENDLAB_PROFILING_PROCESS_SYMBOLIZER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "profiling/symbolizer.h"

namespace backendlab::profiling {

namespace internal {
class ElfFunctions;
}  // namespace internal

// Resolves pcs of an address space described by a /proc/PID/maps text, read
// while the process lived (a backend is gone by the time its samples are
// read, but it was forked from the postmaster without exec: the postmaster's
// mappings are its own, except what it loaded after its fork). Each file's
// function symbols come from where perf takes them, so that the names
// compare: its .symtab, or the .symtab of its separate debug file
// (/usr/lib/debug/.build-id/NN/REST.debug, or its .gnu_debuglink name in its
// directory, its .debug/ or /usr/lib/debug/ and its directory), else its
// .dynsym; of symbols at one address, the one perf would print (sized,
// strong, global, fewest leading underscores, longest). A pc in no mapping
// is "[unknown]"; one in a file without a symbol for it is "[file]"; in an
// anonymous or special mapping, "[vdso]", "[heap]", "[anon]"...
class ProcessSymbolizer final : public FrameSymbolizer {
 public:
  // InvalidArgument naming the line for a maps text that does not parse.
  static absl::StatusOr<std::unique_ptr<ProcessSymbolizer>> FromMaps(std::string_view maps);
  // FromMaps of /proc/PID/maps; NotFound or PermissionDenied when it cannot be read.
  static absl::StatusOr<std::unique_ptr<ProcessSymbolizer>> OfProcess(pid_t pid);
  ~ProcessSymbolizer() override;

  // The files whose symbols could not be read, each with why (reported once).
  const std::vector<std::string>& unreadable() const { return unreadable_; }

 protected:
  std::string Resolve(uintptr_t pc) override;

 private:
  struct Mapping {
    uintptr_t start = 0;
    uintptr_t end = 0;
    uint64_t offset = 0;
    std::string path;  // "" for an anonymous mapping
  };
  ProcessSymbolizer() = default;

  std::vector<Mapping> mappings_;  // by start
  std::map<std::string, std::unique_ptr<internal::ElfFunctions>> files_;  // null: could not be read
  std::vector<std::string> unreadable_;
};

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_PROCESS_SYMBOLIZER_H_
