// A program that stands in for a server linked with an OpenSSL older than
// 1.1.1b (which ignores OPENSSL_INIT_NO_ATEXIT): it exports the three
// functions the openssl-no-atexit library looks up, as 1.1.1a's, and exits.
#include <stdint.h>

extern "C" {

__attribute__((visibility("default"))) unsigned long OpenSSL_version_num() { return 0x1010101fUL; }  // 1.1.1a
__attribute__((visibility("default"))) const char* OpenSSL_version(int) { return "OpenSSL 1.1.1a  20 Nov 2018"; }
__attribute__((visibility("default"))) int OPENSSL_init_crypto(uint64_t, const void*) { return 1; }

}  // extern "C"

int main() { return 0; }
