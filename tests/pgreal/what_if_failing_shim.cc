// A user's shim (pg --what-if=preload:PATH) that keeps the server from
// starting: its constructor says why on stderr, the server's log, and ends
// the process. For the test that such a run gives the log's tail, exit 1,
// and leaves nothing behind.
#include <unistd.h>

namespace {

__attribute__((constructor)) void Refuse() {
  static const char kLine[] = "what_if_failing_shim: this shim refuses to let the server start\n";
  (void)!write(STDERR_FILENO, kLine, sizeof kLine - 1);
  _exit(1);
}

}  // namespace
