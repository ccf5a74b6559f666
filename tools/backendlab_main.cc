// backendlab: the command-line front end. Subcommands are thin; the work is in
// the modules and in tools/*_command.cc.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "base/fresh_allocations.h"
#include "base/interrupt.h"
#include "profiling/perf_record.h"
#include "tools/calibrate_command.h"
#include "tools/catcache_command.h"
#include "tools/flags.h"
#include "tools/compare_command.h"
#include "tools/coverage_command.h"
#include "tools/cycle_command.h"
#include "tools/diff_command.h"
#include "tools/latch_command.h"
#include "tools/layouts_command.h"
#include "tools/machine_header.h"
#include "tools/pg_command.h"
#include "tools/profile_command.h"
#include "tools/waits_command.h"
#include "tools/xlog_command.h"

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
    {"pg", "connect/disconnect loops against real PostgreSQL servers, the server's costs per connection",
     backendlab::tools::RunPgCommand, backendlab::tools::PgUsage},
    {"calibrate", "fit a backend weight profile so that the mock weighs what a real PostgreSQL backend weighs",
     backendlab::tools::RunCalibrateCommand, backendlab::tools::CalibrateUsage},
    {"profile", "call graphs of one configuration: sampler that follows backends, flame graphs, perf",
     backendlab::tools::RunProfileCommand, backendlab::tools::ProfileUsage},
    {"diff", "two folded profiles of one workload set against each other: a differential flame graph",
     backendlab::tools::RunDiffCommand, backendlab::tools::DiffUsage},
    {"layouts", "compare the PrivateRefCount layouts (array, bytes, hash, hash-keys, array-touched)",
     backendlab::tools::RunLayoutsCommand, backendlab::tools::LayoutsUsage},
    {"catcache", "compare the catalog-cache bucket strategies (palloc0, bss, expansible, mmap)",
     backendlab::tools::RunCatcacheCommand, backendlab::tools::CatcacheUsage},
    {"latch", "latch implementations' ping-pong between two processes (self-pipe 2010 to futex)",
     backendlab::tools::RunLatchCommand, backendlab::tools::LatchUsage},
    {"waits", "what a backend pays to wait for its socket, per wait strategy and client/backend pairs",
     backendlab::tools::RunWaitsCommand, backendlab::tools::WaitsUsage},
    {"xlog", "WAL insert locks: four ways to track the last important LSN, and a contention model",
     backendlab::tools::RunXlogCommand, backendlab::tools::XlogUsage},
    {"coverage-study", "simulated runs stopped on their verdicts: do the intervals keep their 95 %?",
     backendlab::tools::RunCoverageCommand, backendlab::tools::CoverageUsage},
};

void PrintUsage(std::ostream& out) {
  out << "usage: backendlab <command> [--flag=value ...]\n\ncommands:\n";
  for (const Command& c : kCommands) out << "  " << c.name << "  " << c.summary << "\n";
  out << "\n'backendlab <command> --help' lists a command's flags; 'backendlab --version' the version and commit.\n";
}

// A closed descriptor 0, 1 or 2 would be handed to the next file the run
// opens (a socket, the --json file), which would then receive our output.
// Standard input and error fall back to /dev/null; a closed standard output
// is a failed run before it starts.
bool StandardDescriptorsOpen() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    if (fd == STDOUT_FILENO) {
      std::cerr << "backendlab: cannot write to standard output: it is closed\n";
      return false;
    }
    const int null_fd = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
    if (null_fd >= 0 && null_fd != fd) close(null_fd);  // cannot happen: the lowest free number is fd
  }
  return true;
}

// What was written to standard output reached it: a full disk (/dev/full) or
// a closed pipe's error is a failed run, not a success.
bool StdoutWritten(std::string_view command) {
  // std::cout writes through stdio's buffer: its flush is the write that
  // fails, and errno says why.
  errno = 0;
  std::cout.flush();
  int error = errno;
  const bool flushed = std::fflush(stdout) == 0;
  if (errno != 0) error = errno;
  if (flushed && std::cout.good() && std::ferror(stdout) == 0) return true;
  std::cerr << "backendlab" << (command.empty() ? "" : " ") << command << ": cannot write to standard output: "
            << (error != 0 ? std::strerror(error) : "a write failed") << "\n";
  return false;
}

// Runs the command and returns its exit status: 0; 2 for a usage error; 1
// for a failed run; 128 + the signal when a stop was asked for.
int RunCommand(const Command& c, std::vector<std::string> args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << c.usage();
      return 0;
    }
  }
  const absl::Status status = c.run(args, std::cout);
  // A stop wins over any other outcome: the run was cut short, whatever it
  // returned. A module that saw a stop of its own (Cancelled) without the
  // process-wide request counts as ^C.
  if (backendlab::StopRequested() || absl::IsCancelled(status)) {
    const int signal = backendlab::StopRequested() ? backendlab::StopSignal() : SIGINT;
    const char* abbrev = sigabbrev_np(signal);
    std::cerr << "backendlab " << c.name << ": "
              << (absl::IsCancelled(status) ? backendlab::tools::OneLine(backendlab::tools::InFlagWords(std::string(status.message()))) : std::string("interrupted: stopped early"))
              << " (SIG" << (abbrev != nullptr ? abbrev : "?") << ")\n";
    return backendlab::StopExitCode(signal);
  }
  if (status.ok()) return 0;
  std::cerr << "backendlab " << c.name << ": " << backendlab::tools::OneLine(backendlab::tools::InFlagWords(std::string(status.message()))) << "\n";
  return absl::IsInvalidArgument(status) ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // First: under `profile --perf`, this process is perf's workload and must
  // end with perf (see RecordUnderPerf), before it starts anything.
  backendlab::profiling::DieWithParentIfAsked();
  backendlab::UseFreshMappingsForLargeAllocations();
  backendlab::InstallStopHandlers();
  // A reader of our output that went away (`| head -0`) makes the write fail
  // with EPIPE, which StdoutWritten reports in one line (exit 1), instead of
  // killing the tool mid-report. Children that exec (perf) get the default back.
  signal(SIGPIPE, SIG_IGN);
  if (!StandardDescriptorsOpen()) return 1;
  if (argc < 2) {
    std::cerr << "backendlab: no command given (try: backendlab --help)\n";
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    PrintUsage(std::cout);
    return StdoutWritten("") ? 0 : 1;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::cout << backendlab::tools::VersionLine() << "\n";
    return StdoutWritten("") ? 0 : 1;
  }
  for (const Command& c : kCommands) {
    if (c.name != std::string_view(argv[1])) continue;
    const int code = RunCommand(c, std::vector<std::string>(argv + 2, argv + argc));
    // A failed write only changes a success: an error already said why.
    if (code == 0 && !StdoutWritten(c.name)) return 1;
    return code;
  }
  std::cerr << "backendlab: unknown command " << backendlab::tools::Quoted(argv[1]) << " (try: backendlab --help)\n";
  return 2;
}
