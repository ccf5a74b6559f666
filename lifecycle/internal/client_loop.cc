// The clients' poll loop and the reader of the postmaster's messages.
#include "lifecycle/internal/client_loop.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/interrupt.h"
#include "base/resource_usage.h"
#include "lifecycle/internal/io.h"
#include "lifecycle/internal/protocol.h"

namespace backendlab::lifecycle::internal {

ClientLoop::ClientLoop(const CycleOptions& options, const std::string& socket_path, int results_fd, CycleResult& result)
    : options_(options), socket_path_(socket_path), results_fd_(results_fd), result_(result) {}

absl::Status ClientLoop::Run() {
  std::vector<Client> clients(static_cast<size_t>(options_.clients));
  std::vector<pollfd> fds;
  fds.reserve(clients.size() + 1);
  const int64_t total = options_.connections > 0 ? options_.warmup + options_.connections : INT64_MAX;
  int64_t started = 0;
  int64_t last_progress = 0;
  absl::Status status;
  while (status.ok()) {
    if (StopRequested()) {
      result_.interrupted = true;
      break;
    }
    if (!postmaster_failure_.ok()) {
      status = postmaster_failure_;
      break;
    }
    const int64_t now = NowNs();
    const bool time_up = options_.connections == 0 && measure_start_ns_ >= 0 &&
                         now - measure_start_ns_ >= absl::ToInt64Nanoseconds(options_.duration);
    const bool done_starting = started >= total || time_up;
    // Start a connection on every idle client.
    for (Client& c : clients) {
      if (c.fd >= 0 || done_starting || started >= total) continue;
      bool connected = false;
      status = Connect(c, connected);
      if (!status.ok()) break;
      if (connected) ++started;
    }
    if (!status.ok()) break;
    bool any_busy = false;
    fds.clear();
    for (const Client& c : clients) {
      any_busy |= c.fd >= 0;
      fds.push_back({c.fd, POLLIN, 0});
    }
    if (!any_busy && done_starting) break;
    fds.push_back({results_fd_, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 100) < 0) {
      // EINTR: a stop signal (checked at the top) or the profiler's SIGPROF.
      // Anything else (EINVAL: more descriptors than RLIMIT_NOFILE; ENOMEM)
      // would fail the same way on every turn.
      if (errno != EINTR) status = absl::UnavailableError(ErrnoLine("poll", errno));
      continue;
    }
    for (size_t i = 0; i < clients.size(); ++i) {
      if (clients[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) Read(clients[i]);
    }
    const short results = fds.back().revents;
    if ((results & POLLIN) && !DrainOne()) {
      postmaster_gone_ = true;  // EOF before we asked it to stop
      break;
    }
    if ((results & (POLLHUP | POLLERR)) && !(results & POLLIN)) {
      postmaster_gone_ = true;
      break;
    }
    if (options_.progress && now - last_progress > 200'000'000) {
      last_progress = now;
      options_.progress(absl::StrCat("cycle: ", completed_, " connections", measure_start_ns_ >= 0 ? "" : " (warm-up)"));
    }
  }
  if (measure_start_ns_ >= 0 && last_complete_ns_ > measure_start_ns_) result_.wall_ns = last_complete_ns_ - measure_start_ns_;
  for (Client& c : clients) {
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
  }
  return status;
}

absl::Status ClientLoop::DrainToEnd() {
  while (DrainOne()) {
  }
  return postmaster_failure_;
}

bool ClientLoop::DrainOne() {
  Message m;
  if (ReadAll(results_fd_, &m, sizeof m) != static_cast<ssize_t>(sizeof m)) return false;
  switch (m.type) {
    case Message::kBaselineFork:
      result_.baseline_fork_ns.Record(m.value);
      break;
    case Message::kSamplesLost:
      result_.samples_dropped += m.value;
      break;
    case Message::kBackend:
      if (IsWarmup(m.record.sequence, options_.warmup)) {
        result_.backends.AddWarmup(m.record);
      } else {
        result_.backends.AddMeasured(m.record);
        if (options_.on_record) options_.on_record(m.record);
      }
      break;
    case Message::kFailed:
      if (postmaster_failure_.ok()) {
        postmaster_failure_ = absl::UnavailableError(
            ErrnoLine(absl::StrCat("postmaster: ", std::string(FailedCallName(m.call))), static_cast<int>(m.value)));
      }
      break;
    case Message::kServerUsage:
      result_.server.user_ns = m.usage.user_ns;
      result_.server.system_ns = m.usage.system_ns;
      result_.server.cpu_ns = m.usage.user_ns + m.usage.system_ns;
      result_.server.minor_faults = m.usage.minor_faults;
      result_.server.major_faults = m.usage.major_faults;
      result_.server.context_switches = m.usage.context_switches;
      result_.server.postmaster_cpu_ns = m.usage.postmaster_ns;
      break;
  }
  return true;
}

absl::Status ClientLoop::Connect(Client& c, bool& connected) {
  // Non-blocking: a connect() to a full backlog must return EAGAIN, not
  // wait, or the loop would stop reading the postmaster's messages while the
  // postmaster, blocked writing them, accepts no one.
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::UnavailableError(ErrnoLine("socket", errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path_.c_str());
  c.started_ns = NowNs();
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int error = errno;
    close(fd);
    // A full backlog (EAGAIN) or a signal: retried on the next turn. Any
    // other error, ENOENT above all (the socket or its directory removed
    // from outside), would come back on every turn: the run ends.
    if (error == EINTR || error == EAGAIN) return absl::OkStatus();
    return absl::UnavailableError(ErrnoLine(absl::StrCat("connect to ", socket_path_), error));
  }
  c.fd = fd;
  c.got = 0;
  c.sequence = -1;
  c.ready_ns = 0;
  c.queries_left = 0;
  connected = true;
  return absl::OkStatus();
}

void ClientLoop::Read(Client& c) {
  if (c.ready_ns != 0) {  // an answer to the query in flight
    char answer;
    const ssize_t n = read(c.fd, &answer, 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    const int64_t now = NowNs();
    if (n <= 0 || answer != kAnswerByte) {  // the backend died mid-session
      Finish(c, false, now);
      return;
    }
    if (!IsWarmup(c.sequence, options_.warmup)) result_.query_latency_ns.Record(now - c.query_sent_ns);
    if (--c.queries_left == 0 || !SendQuery(c)) Finish(c, c.queries_left == 0, now);
    return;
  }
  const ssize_t n = read(c.fd, c.greeting + c.got, sizeof c.greeting - c.got);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  const int64_t now = NowNs();
  if (n <= 0) {  // EOF or ECONNRESET: the backend died before "ready"
    Finish(c, false, now);
    return;
  }
  c.got += static_cast<size_t>(n);
  if (c.sequence < 0 && c.got >= sizeof c.sequence) {
    std::memcpy(&c.sequence, c.greeting, sizeof c.sequence);
    ++accepted_;
    // The measured part begins with the first measured connection's connect().
    if (!IsWarmup(c.sequence, options_.warmup) && (measure_start_ns_ < 0 || c.started_ns < measure_start_ns_)) {
      measure_start_ns_ = c.started_ns;
    }
  }
  if (c.got < sizeof c.greeting) return;
  const bool ready = c.greeting[sizeof c.sequence] == kReadyByte;
  c.ready_ns = now;
  c.queries_left = options_.backend.queries;
  if (!ready || c.queries_left == 0 || !SendQuery(c)) Finish(c, ready && c.queries_left == 0, now);
}

bool ClientLoop::SendQuery(Client& c) {
  c.query_sent_ns = NowNs();
  return SendByte(c.fd, kQueryByte);
}

void ClientLoop::Finish(Client& c, bool ready, int64_t now) {
  if (ready) (void)SendByte(c.fd, kTerminateByte);
  close(c.fd);
  c.fd = -1;
  ++completed_;
  // A connection closed before the postmaster named it cannot be told to be
  // warm-up: it counts as a failed measured one, never hidden.
  if (c.sequence >= 0 && IsWarmup(c.sequence, options_.warmup)) return;
  last_complete_ns_ = now;
  if (ready) {
    ++result_.connections;
    result_.connect_latency_ns.Record(c.ready_ns - c.started_ns);
  } else {
    ++result_.failed_connections;
  }
}

}  // namespace backendlab::lifecycle::internal
