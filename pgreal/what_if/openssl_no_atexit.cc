// what-if openssl-no-atexit (libbackendlab_openssl_no_atexit.so, LD_PRELOADed
// into the postmaster): OpenSSL initialised with OPENSSL_INIT_NO_ATEXIT
// before the server's main() runs, so before PostgreSQL's first call into
// OpenSSL (pg_strong_random's RAND_bytes, SSL set-up) initialises it with
// OpenSSL's default, which registers OPENSSL_cleanup with atexit(). The
// first initialisation's options are the ones that hold: no process the
// postmaster forks runs OPENSSL_cleanup at its exit. What PostgreSQL could
// do itself: the same call at the top of PostmasterMain (A. Freund's
// experiment in the pgsql-hackers thread "Unnecessary connection overhead
// due copy-on-write (mainly openssl)"; docs/sources.md).
//
// "Applied" is said only once it is so: the OpenSSL is 1.1.1b or later (an
// older one ignores the flag), and a child forked after the call exits
// without running OPENSSL_cleanup. The second catches an earlier
// initialisation with the default, which the call cannot undo (no test
// makes one: on this project's machine a preloaded library's constructor
// ran before those of the libraries the program links).
//
// The server's own libcrypto is called, whichever it links (Debian's 3, the
// npm package's 1.1.1): the symbols are looked up in the process, not linked.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/ld_preload.h"
#include "pgreal/what_if/shim_line.h"
#include "pgreal/what_if/what_if_list.h"

namespace {

using backendlab::pgreal::what_if::RefuseToStart;

constexpr const char* kName =
    backendlab::pgreal::WhatIfRowOf(backendlab::pgreal::WhatIfKind::kOpensslNoAtexit).name;
// openssl/crypto.h, the same in 1.1.1 and 3.x.
constexpr uint64_t kOpensslInitNoAtexit = 0x00080000L;
constexpr int kOpensslVersion = 0;  // OPENSSL_VERSION: OpenSSL_version()'s full version text
// OpenSSL_version_num() of 1.1.1b's first development version: the flag
// appeared in 1.1.1b; an older OpenSSL takes it without a word and still
// registers OPENSSL_cleanup.
constexpr unsigned long kFirstWithNoAtexit = 0x10101020UL;

using InitCrypto = int (*)(uint64_t opts, const void* settings);
using VersionNumber = unsigned long (*)();
using VersionText = const char* (*)(int which);
using AtExit = int (*)(void (*handler)());

int g_cleanup_ran_fd = -1;

void SayCleanupRan() {
  const char ran = 'c';
  (void)!write(g_cleanup_ran_fd, &ran, 1);
}

// Whether OPENSSL_cleanup is registered with atexit: a child forked now
// registers a handler of its own for OPENSSL_cleanup to run and exits. 1
// if the handler ran, 0 if not, -1 if the child could not tell. _Fork: the
// handlers other libraries registered with pthread_atfork are not ours to
// run (the process has one thread here, before main()).
int CleanupRunsAtExit(AtExit at_exit) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return -1;
  const pid_t child = _Fork();
  if (child == 0) {
    close(ends[0]);
    g_cleanup_ran_fd = ends[1];
    if (at_exit(SayCleanupRan) != 1) _exit(2);
    exit(0);  // with the atexit handlers: OPENSSL_cleanup, if it is one
  }
  close(ends[1]);
  if (child < 0) {
    close(ends[0]);
    return -1;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  char ran = 0;
  const ssize_t n = read(ends[0], &ran, 1);
  close(ends[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return n == 1 ? 1 : 0;
}

__attribute__((constructor)) void InitOpensslWithoutAtexit() {
  backendlab::RemoveOwnLibraryFromLdPreload(reinterpret_cast<const void*>(&InitOpensslWithoutAtexit));
  const auto init = reinterpret_cast<InitCrypto>(dlsym(RTLD_DEFAULT, "OPENSSL_init_crypto"));
  const auto version_number = reinterpret_cast<VersionNumber>(dlsym(RTLD_DEFAULT, "OpenSSL_version_num"));
  const auto version_text = reinterpret_cast<VersionText>(dlsym(RTLD_DEFAULT, "OpenSSL_version"));
  if (init == nullptr || version_number == nullptr || version_text == nullptr) {
    RefuseToStart(kName, "the server has no OPENSSL_init_crypto (OpenSSL before 1.1.0, or a build without OpenSSL)");
  }
  char version[160];
  snprintf(version, sizeof version, "%s", version_text(kOpensslVersion));
  if (version_number() < kFirstWithNoAtexit) {
    char why[256];
    snprintf(why, sizeof why, "%s ignores OPENSSL_INIT_NO_ATEXIT, which came with 1.1.1b", version);
    RefuseToStart(kName, why);
  }
  if (init(kOpensslInitNoAtexit, nullptr) != 1) RefuseToStart(kName, "OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT) failed");
  const auto at_exit = reinterpret_cast<AtExit>(dlsym(RTLD_DEFAULT, "OPENSSL_atexit"));
  const int ran = at_exit != nullptr ? CleanupRunsAtExit(at_exit) : -1;
  if (ran != 0) {
    RefuseToStart(kName, ran > 0 ? "OPENSSL_cleanup still runs at exit: OpenSSL was initialised before this library's "
                                   "constructor (by a library of the program's), with atexit"
                                 : "a forked child could not tell whether OPENSSL_cleanup runs at exit");
  }
  char detail[256];
  snprintf(detail, sizeof detail, "%s; a forked child's exit ran no OPENSSL_cleanup", version);
  backendlab::pgreal::what_if::SayApplied(kName, detail);
}

}  // namespace
