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
#include "base/cpus.h"
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
    // A held backend says nothing until it is told to end: anything from
    // it is its end.
    for (int fd : held_) fds.push_back({fd, POLLIN, 0});
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
    status = CheckHeld(fds, clients.size());
    if (!status.ok()) break;
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
      if (IsWarmup(m.record.sequence, first_measured())) {
        result_.backends.AddWarmup(m.record);
      } else {
        result_.backends.AddMeasured(m.record);
        if (options_.on_record) options_.on_record(m.record);
      }
      break;
    case Message::kFailed:
      if (postmaster_failure_.ok() && m.call == FailedCall::kPoolStart) {
        postmaster_failure_ = absl::UnavailableError("postmaster: a pre-forked backend died before it was built");
      } else if (postmaster_failure_.ok() && m.call == FailedCall::kMemberStopped) {
        postmaster_failure_ = absl::UnavailableError(
            absl::StrCat("postmaster: pre-forked backend ", m.record.pid, " (pool member ", m.value, ") stayed stopped for ",
                         kStoppedMemberNs / 1'000'000'000, " s ",
                         m.record.sequence < 0 ? std::string("while the pool was built")
                                               : absl::StrCat("with connection ", m.record.sequence, " handed to it"),
                         "; killed it"));
      } else if (postmaster_failure_.ok()) {
        postmaster_failure_ = absl::UnavailableError(
            ErrnoLine(absl::StrCat("postmaster: ", std::string(FailedCallName(m.call))), static_cast<int>(m.value)));
      }
      break;
    case Message::kReplaced:
      ++result_.replaced;
      break;
    case Message::kPoolOutside:
      result_.pool_outside_cpu_ns = m.value;
      break;
    case Message::kServerUsage:
      usage_received_ = true;
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
    if (!IsWarmup(c.sequence, first_measured())) result_.query_latency_ns.Record(now - c.query_sent_ns);
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
    if (!IsWarmup(c.sequence, first_measured()) && (measure_start_ns_ < 0 || c.started_ns < measure_start_ns_)) {
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
  if (c.sequence >= 0 && IsWarmup(c.sequence, first_measured())) return;
  last_complete_ns_ = now;
  if (ready) {
    ++result_.connections;
    result_.connect_latency_ns.Record(c.ready_ns - c.started_ns);
  } else {
    ++result_.failed_connections;
  }
}

absl::Status ClientLoop::CheckHeld(const std::vector<pollfd>& fds, size_t first) const {
  for (size_t i = 0; i < held_.size(); ++i) {
    if (fds[first + i].revents != 0) {
      return absl::InternalError(absl::StrCat("a held connection's backend ended during the run (held connection ", i,
                                              " of ", held_.size(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ClientLoop::OpenHeld() {
  if (options_.hold == 0) return absl::OkStatus();
  // The loop's connect and greeting, without the rest: a held connection is
  // a client that never sends terminate.
  std::vector<Client> opening(static_cast<size_t>(SaturationClients()));
  // Those still opening are closed on every way out; the held ones by CloseHeld.
  struct CloseOpening {
    std::vector<Client>& clients;
    ~CloseOpening() {
      for (Client& c : clients) {
        if (c.fd >= 0) close(c.fd);
      }
    }
  } close_opening{opening};
  std::vector<pollfd> fds;
  int64_t started = 0;
  const int64_t begin = NowNs();
  int64_t last_progress = begin;
  while (static_cast<int64_t>(held_.size()) < options_.hold) {
    if (StopRequested()) {
      result_.interrupted = true;
      break;
    }
    if (!postmaster_failure_.ok()) return postmaster_failure_;
    for (Client& c : opening) {
      if (c.fd >= 0 || started >= options_.hold) continue;
      bool connected = false;
      if (absl::Status s = Connect(c, connected); !s.ok()) return s;
      if (connected) ++started;
    }
    fds.clear();
    for (const Client& c : opening) fds.push_back({c.fd, POLLIN, 0});
    fds.push_back({results_fd_, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 100) < 0) {
      if (errno != EINTR) return absl::UnavailableError(ErrnoLine("poll", errno));
      continue;
    }
    for (size_t i = 0; i < opening.size(); ++i) {
      Client& c = opening[i];
      if (c.fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = read(c.fd, c.greeting + c.got, sizeof c.greeting - c.got);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        return absl::InternalError(absl::StrCat("`hold`: a backend ended before it was ready (", held_.size(), " of ",
                                                options_.hold, " held connections open)"));
      }
      c.got += static_cast<size_t>(n);
      if (c.got < sizeof c.greeting) continue;
      if (c.greeting[sizeof c.sequence] != kReadyByte) {
        return absl::InternalError("`hold`: a backend did not say it was ready");
      }
      held_.push_back(c.fd);
      c.fd = -1;
    }
    const short results = fds.back().revents;
    if (((results & POLLIN) && !DrainOne()) || ((results & (POLLHUP | POLLERR)) && !(results & POLLIN))) {
      postmaster_gone_ = true;
      return absl::InternalError("the postmaster ended while the held connections opened");
    }
    if (options_.progress && NowNs() - last_progress > 200'000'000) {
      last_progress = NowNs();
      options_.progress(absl::StrCat("cycle: holding ", held_.size(), " of ", options_.hold, " connections"));
    }
  }
  result_.hold_open_ns = NowNs() - begin;
  return absl::OkStatus();
}

absl::Status ClientLoop::AwaitUsage(int control_fd) {
  if (held_.empty()) return absl::OkStatus();
  const char ask = kUsageByte;
  if (write(control_fd, &ask, 1) != 1) return absl::UnavailableError(ErrnoLine("write to the postmaster", errno));
  std::vector<pollfd> fds;
  while (!usage_received_) {
    if (StopRequested()) {
      result_.interrupted = true;
      return absl::OkStatus();
    }
    fds.clear();
    for (int fd : held_) fds.push_back({fd, POLLIN, 0});
    fds.push_back({results_fd_, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 100) < 0) {
      if (errno != EINTR) return absl::UnavailableError(ErrnoLine("poll", errno));
      continue;
    }
    if (absl::Status s = CheckHeld(fds, 0); !s.ok()) return s;
    if ((fds.back().revents & (POLLIN | POLLHUP | POLLERR)) && !DrainOne()) {
      postmaster_gone_ = true;
      break;
    }
  }
  return postmaster_failure_;
}

void ClientLoop::CloseHeld() {
  for (int fd : held_) {
    (void)SendByte(fd, kTerminateByte);
    close(fd);
  }
  held_.clear();
}

}  // namespace backendlab::lifecycle::internal
