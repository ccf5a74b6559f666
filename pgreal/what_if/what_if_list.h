// The one list of what-ifs (pgreal/what_if.h), as PostgreSQL's
// src/include/postmaster/proctypelist.h lists its process types: a row per
// what-if, expanded wherever one is named, parsed, described or applied —
// by the tool and by the shims LD_PRELOADed into the server (which is why it
// is plain C++ with no library: a shim links libc alone). Adding a what-if
// is a row here, plus its shim (what_if/NAME.cc and its line in
// pgreal/CMakeLists.txt) if it has one.
//
// BACKENDLAB_WHAT_IF(kind, name, library, minimum_major, why_minimum, setting, value, description)
//   kind:          WhatIfKind's enumerator
//   name:          as the tool names it (a preload's: "preload:" before its path)
//   library:       the shim the build makes, libbackendlab_LIBRARY.so, loaded into the
//                  postmaster; "" for none
//   minimum_major: the oldest PostgreSQL it applies to (0: any), and why
//   setting/value: the server setting it makes, "" for none
//   description:   what it changes, in a line
#ifndef BACKENDLAB_PGREAL_WHAT_IF_WHAT_IF_LIST_H_
#define BACKENDLAB_PGREAL_WHAT_IF_WHAT_IF_LIST_H_

#define BACKENDLAB_WHAT_IFS(BACKENDLAB_WHAT_IF)                                                                     \
  BACKENDLAB_WHAT_IF(kOpensslNoAtexit, "openssl-no-atexit", "openssl_no_atexit", 0, "", "", "",                      \
                     "OpenSSL initialised with OPENSSL_INIT_NO_ATEXIT before the server's main(): no "            \
                     "OPENSSL_cleanup at exit")                                                                     \
  BACKENDLAB_WHAT_IF(kQuickExit, "quick-exit", "quick_exit", 0, "", "", "",                                          \
                     "_exit() once PostgreSQL's exit callbacks have run: no atexit handlers, no library "          \
                     "destructors")                                                                                 \
  BACKENDLAB_WHAT_IF(kHugePages, "huge-pages", "", 15,                                                               \
                     "its shared_memory_size_in_huge_pages tells the pages to reserve", "huge_pages", "on",         \
                     "huge_pages=on, the huge pages it needs reserved")                                            \
  BACKENDLAB_WHAT_IF(kPreload, "preload:", "", 0, "", "", "", "the library LD_PRELOADed into the postmaster")       \
  BACKENDLAB_WHAT_IF(kSetupDurations, "setup-durations", "", 18, "log_connections=setup_durations",                 \
                     "log_connections", "setup_durations",                                                         \
                     "log_connections=setup_durations: the server's own clock, and its ratio what that logging "   \
                     "costs")

namespace backendlab::pgreal {

#define BACKENDLAB_WHAT_IF_KIND(kind, ...) kind,
enum class WhatIfKind { BACKENDLAB_WHAT_IFS(BACKENDLAB_WHAT_IF_KIND) };
#undef BACKENDLAB_WHAT_IF_KIND

// A row of the list.
struct WhatIfRow {
  WhatIfKind kind;
  const char* name;
  const char* library;
  int minimum_major;
  const char* why_minimum;
  const char* setting;
  const char* value;
  const char* description;
};

#define BACKENDLAB_WHAT_IF_ROW(kind, name, library, minimum, why, setting, value, description) \
  {WhatIfKind::kind, name, library, minimum, why, setting, value, description},
inline constexpr WhatIfRow kWhatIfs[] = {BACKENDLAB_WHAT_IFS(BACKENDLAB_WHAT_IF_ROW)};
#undef BACKENDLAB_WHAT_IF_ROW

// The row of `kind`: every kind has one, in its enum's order.
constexpr const WhatIfRow& WhatIfRowOf(WhatIfKind kind) { return kWhatIfs[static_cast<int>(kind)]; }

// What a shim writes into the server's log once loaded ("backendlab what-if
// NAME: applied in process PID"), which the tool looks for before a run.
inline constexpr char kAppliedLinePrefix[] = "backendlab what-if ";
inline constexpr char kAppliedLineWord[] = ": applied";

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_WHAT_IF_WHAT_IF_LIST_H_
