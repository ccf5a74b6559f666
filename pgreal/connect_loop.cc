// Non-blocking libpq clients over poll(): PQconnectStart/PQconnectPoll, then
// PQsendQuery/PQconsumeInput, then PQfinish, --clients at a time.
#include "pgreal/connect_loop.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/interleaved.h"
#include "base/interrupt.h"

namespace backendlab::pgreal {
namespace {

// libpq's messages end with a newline and may span lines: one line.
std::string OneLine(const char* message) {
  std::string s = absl::StrReplaceAll(message != nullptr ? message : "", {{"\n", " "}, {"\t", " "}});
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// A connection started without blocking (PQconnectStart), libpq's notices
// silenced. Its first wait is for POLLOUT, as libpq's documentation says.
absl::StatusOr<PGconn*> StartConnecting(const std::string& conninfo) {
  PGconn* conn = PQconnectStart(conninfo.c_str());
  if (conn == nullptr) return absl::ResourceExhaustedError("PQconnectStart: out of memory");
  // libpq prints what it treats as a notice on stderr, an error that comes
  // while the connection is idle too (a backend's "terminating connection
  // due to unexpected postmaster exit"): a stray line before the tool's own.
  // The loop reports failures itself.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  if (PQstatus(conn) == CONNECTION_BAD) {
    const std::string why = OneLine(PQerrorMessage(conn));
    PQfinish(conn);
    return absl::InternalError(absl::StrCat("cannot connect: ", why));
  }
  return conn;
}

// One step of a connection being made, once poll() saw what it waited for:
// 0 when it is made, else what to poll for next.
absl::StatusOr<short> ContinueConnecting(PGconn* conn) {
  switch (PQconnectPoll(conn)) {
    case PGRES_POLLING_READING:
      return POLLIN;
    case PGRES_POLLING_WRITING:
      return POLLOUT;
    case PGRES_POLLING_OK:
      return 0;
    default:
      return absl::InternalError(absl::StrCat("cannot connect: ", OneLine(PQerrorMessage(conn))));
  }
}

struct Client {
  enum class State { kIdle, kConnecting, kQuerying };
  State state = State::kIdle;
  PGconn* conn = nullptr;
  short wait_for = POLLOUT;  // what poll() must see before the next step
  int64_t start_ns = 0;
  int64_t connected_ns = 0;
  bool measured = false;
};

class Loop {
 public:
  explicit Loop(const LoopOptions& options) : options_(options), clients_(options.clients) {}
  ~Loop() {
    for (Client& c : clients_) {
      if (c.conn != nullptr) PQfinish(c.conn);
    }
  }

  absl::StatusOr<LoopResult> Run();

 private:
  // Whether another connection may start: warm-up first, then the measured
  // ones up to the count or the deadline.
  bool MayStart() const {
    if (started_ < options_.warmup) return true;
    if (options_.connections > 0) return started_ < options_.warmup + options_.connections;
    // The first measured connection starts the clock (Start); then the
    // deadline counts.
    return !measuring_ || NowNs() < deadline_ns_;
  }
  absl::Status Start(Client& c);
  // One step of a client whose socket is ready; may finish the connection.
  absl::Status Step(Client& c);
  absl::Status Finish(Client& c);
  void BeginMeasuring();

  const LoopOptions& options_;
  std::vector<Client> clients_;
  int64_t started_ = 0;
  int64_t finished_ = 0;
  bool measuring_ = false;
  int64_t deadline_ns_ = 0;
  int64_t begin_ns_ = 0;
  ResourceSample begin_usage_;
  LoopResult result_;
};

void Loop::BeginMeasuring() {
  measuring_ = true;
  begin_usage_ = SampleSelf();
  begin_ns_ = NowNs();
  deadline_ns_ = begin_ns_ + absl::ToInt64Nanoseconds(options_.duration);
}

absl::Status Loop::Start(Client& c) {
  // Warm-up is over when the last warm-up connection has *started*: the
  // measured ones then begin with the pipeline already full, as a steady
  // loop does.
  if (!measuring_ && started_ == options_.warmup) BeginMeasuring();
  c.measured = started_ >= options_.warmup;
  ++started_;
  c.start_ns = NowNs();
  absl::StatusOr<PGconn*> conn = StartConnecting(options_.conninfo);
  if (!conn.ok()) return conn.status();
  c.conn = *conn;
  c.state = Client::State::kConnecting;
  c.wait_for = POLLOUT;
  return absl::OkStatus();
}

absl::Status Loop::Step(Client& c) {
  if (c.state == Client::State::kConnecting) {
    absl::StatusOr<short> next = ContinueConnecting(c.conn);
    if (!next.ok()) return next.status();
    if (*next != 0) {
      c.wait_for = *next;
      return absl::OkStatus();
    }
    c.connected_ns = NowNs();
    if (options_.query.empty()) return Finish(c);
    if (PQsetnonblocking(c.conn, 1) != 0 || PQsendQuery(c.conn, options_.query.c_str()) == 0) {
      return absl::InternalError(absl::StrCat("`query`: ", OneLine(PQerrorMessage(c.conn))));
    }
    c.state = Client::State::kQuerying;
    c.wait_for = PQflush(c.conn) == 1 ? POLLOUT : POLLIN;
    return absl::OkStatus();
  }
  // Querying: send what is left, then read until the result is complete.
  const int flushed = PQflush(c.conn);
  if (flushed < 0) return absl::InternalError(absl::StrCat("`query`: ", OneLine(PQerrorMessage(c.conn))));
  if (flushed == 1) {
    c.wait_for = POLLOUT;
    return absl::OkStatus();
  }
  if (PQconsumeInput(c.conn) == 0) {
    return absl::InternalError(absl::StrCat("`query`: ", OneLine(PQerrorMessage(c.conn))));
  }
  while (PQisBusy(c.conn) == 0) {
    PGresult* r = PQgetResult(c.conn);
    if (r == nullptr) return Finish(c);
    const ExecStatusType status = PQresultStatus(r);
    std::string error;
    if (status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE || status == PGRES_NONFATAL_ERROR) {
      error = OneLine(PQresultErrorMessage(r));
    }
    PQclear(r);
    if (!error.empty()) return absl::InternalError(absl::StrCat("`query` failed: ", error));
  }
  c.wait_for = POLLIN;
  return absl::OkStatus();
}

absl::Status Loop::Finish(Client& c) {
  PQfinish(c.conn);  // sends Terminate ('X') and closes: the backend then exits
  c.conn = nullptr;
  const int64_t end = NowNs();
  c.state = Client::State::kIdle;
  ++finished_;
  if (c.measured) {
    result_.connect_ns.Record(c.connected_ns - c.start_ns);
    result_.connection_ns.Record(end - c.start_ns);
    ++result_.connections;
    result_.wall_ns = end - begin_ns_;
  }
  return absl::OkStatus();
}

absl::StatusOr<LoopResult> Loop::Run() {
  std::vector<pollfd> fds(clients_.size());
  int64_t last_progress = NowNs();
  if (options_.warmup == 0) BeginMeasuring();
  for (;;) {
    if (StopRequested()) return StoppedStatus();
    int busy = 0;
    for (Client& c : clients_) {
      if (c.state == Client::State::kIdle && MayStart()) {
        if (absl::Status s = Start(c); !s.ok()) return s;
      }
      busy += c.state != Client::State::kIdle;
    }
    if (busy == 0) break;
    for (size_t i = 0; i < clients_.size(); ++i) {
      const Client& c = clients_[i];
      fds[i] = {c.conn != nullptr ? PQsocket(c.conn) : -1, c.wait_for, 0};
    }
    const int n = poll(fds.data(), fds.size(), 100);
    if (n < 0 && errno != EINTR) return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    for (size_t i = 0; n > 0 && i < clients_.size(); ++i) {
      if (fds[i].fd >= 0 && fds[i].revents != 0) {
        if (absl::Status s = Step(clients_[i]); !s.ok()) return s;
      }
    }
    if (options_.progress && NowNs() - last_progress > 100'000'000) {
      last_progress = NowNs();
      options_.progress(finished_);
    }
  }
  result_.client = SampleSelf() - begin_usage_;
  return result_;
}

}  // namespace

absl::StatusOr<LoopResult> RunConnectLoop(const LoopOptions& options) {
  Loop loop(options);
  return loop.Run();
}

absl::StatusOr<HeldConnections> HeldConnections::Open(const std::string& conninfo, int64_t n, int in_flight,
                                                      const std::function<void(int64_t)>& progress) {
  HeldConnections held;  // closes every connection made, on every path
  held.conns_.reserve(static_cast<size_t>(n));
  struct Pending {
    PGconn* conn;
    short wait_for;
  };
  std::vector<Pending> pending;
  std::vector<pollfd> fds;
  int64_t started = 0;
  int64_t last_progress = NowNs();
  const int64_t begin = NowNs();
  auto failed = [&](const absl::Status& why) {
    for (Pending& p : pending) PQfinish(p.conn);
    return absl::Status(why.code(), absl::StrCat(why.message(), " (", held.size(), " of ", n, " held connections open)"));
  };
  while (held.size() < n) {
    if (StopRequested()) {
      for (Pending& p : pending) PQfinish(p.conn);
      return StoppedStatus();
    }
    while (started < n && static_cast<int>(pending.size()) < in_flight) {
      absl::StatusOr<PGconn*> conn = StartConnecting(conninfo);
      if (!conn.ok()) return failed(conn.status());
      pending.push_back({*conn, POLLOUT});
      ++started;
    }
    fds.clear();
    for (const Pending& p : pending) fds.push_back({PQsocket(p.conn), p.wait_for, 0});
    const int ready = poll(fds.data(), fds.size(), 100);
    if (ready < 0 && errno != EINTR) return failed(absl::InternalError(absl::StrCat("poll: ", std::strerror(errno))));
    for (size_t i = fds.size(); ready > 0 && i-- > 0;) {
      if (fds[i].revents == 0) continue;
      absl::StatusOr<short> next = ContinueConnecting(pending[i].conn);
      if (!next.ok()) return failed(next.status());
      if (*next != 0) {
        pending[i].wait_for = *next;
        continue;
      }
      held.conns_.push_back(pending[i].conn);
      pending.erase(pending.begin() + static_cast<ptrdiff_t>(i));
    }
    if (progress && NowNs() - last_progress > 100'000'000) {
      last_progress = NowNs();
      progress(held.size());
    }
  }
  held.open_ns_ = NowNs() - begin;
  return held;
}

HeldConnections& HeldConnections::operator=(HeldConnections&& other) noexcept {
  if (this != &other) {
    Close();
    conns_ = std::move(other.conns_);
    other.conns_.clear();
    open_ns_ = other.open_ns_;
  }
  return *this;
}

std::vector<pid_t> HeldConnections::BackendPids() const {
  std::vector<pid_t> pids;
  for (PGconn* conn : conns_) pids.push_back(PQbackendPID(conn));
  return pids;
}

absl::Status HeldConnections::CheckOpen() const {
  std::vector<pollfd> fds;
  for (PGconn* conn : conns_) fds.push_back({PQsocket(conn), POLLIN | POLLRDHUP, 0});
  if (poll(fds.data(), fds.size(), 0) < 0) return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
  int64_t closed = 0;
  for (const pollfd& f : fds) closed += f.revents != 0;
  if (closed == 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(closed, " of ", size(), " held connections were closed by the server during the run"));
}

void HeldConnections::Close() {
  for (PGconn* conn : conns_) PQfinish(conn);
  conns_.clear();
}

absl::StatusOr<int> ServerMajorVersion(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  const int version = PQstatus(conn) == CONNECTION_OK ? PQserverVersion(conn) : 0;
  const std::string error = OneLine(PQerrorMessage(conn));
  PQfinish(conn);
  if (version <= 0) return absl::InternalError(absl::StrCat("cannot connect: ", error));
  return version / 10000;  // 150018 -> 15 (10 and later)
}

}  // namespace backendlab::pgreal
