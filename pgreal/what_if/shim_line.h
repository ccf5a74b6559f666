// The one line a what-if library writes into the server's log (its stderr)
// when it is loaded: "backendlab what-if NAME: applied in process PID", with
// what it checked in parentheses where it says more, which the tool looks
// for once the server is up, or "backendlab what-if NAME: not applied: WHY",
// after which the library ends the process (exit status 1) so that the
// server fails to start with the reason in its log. libc only: the library
// is loaded into a server the tool did not build.
#ifndef BACKENDLAB_PGREAL_WHAT_IF_SHIM_LINE_H_
#define BACKENDLAB_PGREAL_WHAT_IF_SHIM_LINE_H_

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pgreal/what_if/what_if_list.h"

namespace backendlab::pgreal::what_if {

inline void SayApplied(const char* name, const char* detail = nullptr) {
  char line[512];
  const int n = snprintf(line, sizeof line, "%s%s%s in process %d%s%s%s\n", kAppliedLinePrefix, name, kAppliedLineWord,
                         static_cast<int>(getpid()), detail != nullptr ? " (" : "", detail != nullptr ? detail : "",
                         detail != nullptr ? ")" : "");
  if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
}

[[noreturn]] inline void RefuseToStart(const char* name, const char* why) {
  char line[400];
  const int n = snprintf(line, sizeof line, "%s%s: not applied: %s\n", kAppliedLinePrefix, name, why);
  if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
  _exit(1);
}

}  // namespace backendlab::pgreal::what_if

#endif  // BACKENDLAB_PGREAL_WHAT_IF_SHIM_LINE_H_
