// what-if quick-exit (libbackendlab_quick_exit.so, LD_PRELOADed into the
// postmaster): every server process, once PostgreSQL's own exit callbacks
// have run (proc_exit() sets proc_exit_inprogress, runs the on_proc_exit and
// on_shmem_exit callbacks, then calls exit()), leaves with _exit(): no libc
// atexit handlers (OpenSSL's OPENSSL_cleanup among them) and no library
// destructors (_dl_fini: libstdc++'s and ICU's). stdio is flushed first. An
// exit() called elsewhere, before PostgreSQL's callbacks ran, is libc's own.
// What PostgreSQL could do itself: _exit() at the end of proc_exit() (A.
// Freund's experiment in the pgsql-hackers thread "Unnecessary connection
// overhead due copy-on-write (mainly openssl)"; docs/sources.md).
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/ld_preload.h"
#include "pgreal/what_if/shim_line.h"
#include "pgreal/what_if/what_if_list.h"

namespace {

constexpr const char* kName = backendlab::pgreal::WhatIfRowOf(backendlab::pgreal::WhatIfKind::kQuickExit).name;

using ExitFunction = void (*)(int);

// PostgreSQL's flag (storage/ipc.h), found in the server's exported symbols.
const volatile bool* g_in_progress = nullptr;
ExitFunction g_libc_exit = nullptr;

__attribute__((constructor)) void FindProcExitFlag() {
  // Meant for the server and its forks, not for what it executes.
  backendlab::RemoveOwnLibraryFromLdPreload(reinterpret_cast<const void*>(&FindProcExitFlag));
  g_in_progress = static_cast<const volatile bool*>(dlsym(RTLD_DEFAULT, "proc_exit_inprogress"));
  g_libc_exit = reinterpret_cast<ExitFunction>(dlsym(RTLD_NEXT, "exit"));
  if (g_in_progress == nullptr) {
    backendlab::pgreal::what_if::RefuseToStart(kName, "the program has no proc_exit_inprogress: not a PostgreSQL server");
  }
  if (g_libc_exit == nullptr) backendlab::pgreal::what_if::RefuseToStart(kName, "libc's exit() was not found");
  backendlab::pgreal::what_if::SayApplied(kName);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void exit(int status) noexcept {
  if (g_in_progress != nullptr && *g_in_progress) {
    fflush(nullptr);
    _exit(status);
  }
  if (g_libc_exit == nullptr) g_libc_exit = reinterpret_cast<ExitFunction>(dlsym(RTLD_NEXT, "exit"));
  g_libc_exit(status);
  _exit(status);  // not reached: libc's exit does not return
}
