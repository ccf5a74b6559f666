// backendlab: the command-line front end. Subcommands are thin; the work is in
// the modules and in tools/*_command.cc.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/fresh_allocations.h"
#include "base/interrupt.h"
#include "tools/catcache_command.h"
#include "tools/cycle_command.h"
#include "tools/layouts_command.h"
#include "tools/profile_command.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  absl::Status (*run)(std::span<const std::string>, std::ostream&);
  std::string (*usage)();
};

constexpr Command kCommands[] = {
    {"compare", "connect/disconnect loops over a matrix of configurations, interleaved",
     backendlab::tools::RunCompareCommand, backendlab::tools::CompareUsage},
    {"cycle", "connect/disconnect loops against one configuration, phase by phase",
     backendlab::tools::RunCycleCommand, backendlab::tools::CycleUsage},
    {"profile", "call graphs of one configuration: sampler that follows backends, flame graphs, perf",
     backendlab::tools::RunProfileCommand, backendlab::tools::ProfileUsage},
    {"layouts", "compare the PrivateRefCount layouts (array, bytes, hash)",
     backendlab::tools::RunLayoutsCommand, backendlab::tools::LayoutsUsage},
    {"catcache", "compare the catalog-cache bucket strategies (palloc0, bss, expansible, mmap)",
     backendlab::tools::RunCatcacheCommand, backendlab::tools::CatcacheUsage},
};

void PrintUsage(std::ostream& out) {
  out << "usage: backendlab <command> [--flag=value ...]\n\ncommands:\n";
  for (const Command& c : kCommands) out << "  " << c.name << "  " << c.summary << "\n";
  out << "\n'backendlab <command> --help' lists a command's flags.\n";
}

}  // namespace

int main(int argc, char** argv) {
  backendlab::UseFreshMappingsForLargeAllocations();
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    PrintUsage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? 2 : 0;
  }
  for (const Command& c : kCommands) {
    if (c.name != std::string(argv[1])) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::cout << c.usage();
        return 0;
      }
    }
    absl::Status status = c.run(args, std::cout);
    if (status.ok()) return 0;
    std::cerr << "backendlab " << c.name << ": " << status.message() << "\n";
    // Stopped by a signal, cleanly: 128 + the signal, as a shell expects.
    if (absl::IsCancelled(status)) return backendlab::StopRequested() ? backendlab::StopExitCode(backendlab::StopSignal()) : 130;
    return absl::IsInvalidArgument(status) ? 2 : 1;
  }
  std::cerr << "backendlab: unknown command '" << argv[1] << "' (try: backendlab --help)\n";
  return 2;
}
