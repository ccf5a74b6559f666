// The postmaster-death pipe.
#include "waits/postmaster_death.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace backendlab::waits {

absl::StatusOr<PostmasterDeathPipe> PostmasterDeathPipe::Create() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::UnavailableError(absl::StrCat("pipe: ", std::strerror(errno)));
  PostmasterDeathPipe p;
  p.watch_.Reset(fds[0]);
  p.own_.Reset(fds[1]);
  // Only the watch end is non-blocking, as PostgreSQL's: the check reads it.
  if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
    return absl::UnavailableError(absl::StrCat("fcntl(O_NONBLOCK): ", std::strerror(errno)));
  }
  return p;
}

bool PostmasterDeathPipe::PostmasterAlive() const { return PostmasterAliveOn(watch_.get()); }

bool PostmasterAliveOn(int watch_fd) {
  char c;
  ssize_t n;
  do {
    n = read(watch_fd, &c, 1);
  } while (n < 0 && errno == EINTR);
  // Nobody writes to the pipe: EAGAIN is life, EOF (or any other answer) death.
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace backendlab::waits
