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
// The server's own libcrypto is called, whichever it links (Debian's 3, the
// npm package's 1.1.1): the symbol is looked up in the process, not linked.
#include <dlfcn.h>
#include <stdint.h>

#include "pgreal/what_if/shim_line.h"
#include "pgreal/what_if/what_if_list.h"

namespace {

constexpr const char* kName =
    backendlab::pgreal::WhatIfRowOf(backendlab::pgreal::WhatIfKind::kOpensslNoAtexit).name;
// openssl/crypto.h, the same in 1.1.1 and 3.x.
constexpr uint64_t kOpensslInitNoAtexit = 0x00080000L;

using InitCrypto = int (*)(uint64_t opts, const void* settings);

__attribute__((constructor)) void InitOpensslWithoutAtexit() {
  const auto init = reinterpret_cast<InitCrypto>(dlsym(RTLD_DEFAULT, "OPENSSL_init_crypto"));
  if (init == nullptr) {
    backendlab::pgreal::what_if::RefuseToStart(
        kName, "the server has no OPENSSL_init_crypto (OpenSSL before 1.1.0, or a build without OpenSSL)");
  }
  if (init(kOpensslInitNoAtexit, nullptr) != 1) {
    backendlab::pgreal::what_if::RefuseToStart(kName, "OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT) failed");
  }
  backendlab::pgreal::what_if::SayApplied(kName);
}

}  // namespace
