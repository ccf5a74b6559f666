// A program the what-if libraries are preloaded into by what_if_test.cc,
// standing in for a server where a deterministic check needs one:
//   what_if_probe quick-exit in-progress|not-in-progress
//     exports PostgreSQL's proc_exit_inprogress, sets it (or not), registers
//     an atexit handler that writes "atexit ran", leaves "buffered" in
//     stdio's buffer, and calls exit(3);
//   what_if_probe openssl
//     registers an OPENSSL_atexit handler that writes "OPENSSL_cleanup ran",
//     initialises OpenSSL implicitly (RAND_bytes, as pg_strong_random does),
//     and calls exit(0);
//   what_if_probe ld-preload
//     writes "LD_PRELOAD=" and the variable (or "(unset)"): what a program
//     this one executed would be given.
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern "C" {
// PostgreSQL's flag, exported as the server exports it.
__attribute__((visibility("default"))) bool proc_exit_inprogress = false;
}

namespace {

void Say(const char* text) { (void)!write(STDOUT_FILENO, text, strlen(text)); }
void AtExit() { Say("atexit ran\n"); }
void OnOpensslCleanup() { Say("OPENSSL_cleanup ran\n"); }

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "quick-exit") == 0) {
    atexit(AtExit);
    proc_exit_inprogress = strcmp(argv[2], "in-progress") == 0;
    fputs("buffered\n", stdout);  // a pipe or a file: fully buffered, written only by a flush
    exit(3);
  }
  if (argc == 2 && strcmp(argv[1], "openssl") == 0) {
    if (OPENSSL_atexit(OnOpensslCleanup) != 1) return 2;
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1) return 2;
    exit(0);
  }
  if (argc == 2 && strcmp(argv[1], "ld-preload") == 0) {
    const char* preload = getenv("LD_PRELOAD");
    Say("LD_PRELOAD=");
    Say(preload != nullptr ? preload : "(unset)");
    Say("\n");
    return 0;
  }
  fputs("usage: what_if_probe quick-exit in-progress|not-in-progress | openssl | ld-preload\n", stderr);
  return 2;
}
