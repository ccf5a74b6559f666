// Client/backend(/remote) process pairs doing request/response round trips,
// the backends waiting with each strategy; interleaved over strategy × pairs.
#include "waits/waits_experiment.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/histogram.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "base/resource_usage.h"
#include "base/unique_fd.h"
#include "profiling/perf_events.h"
#include "waits/internal/children.h"
#include "waits/internal/loop_counters.h"
#include "waits/internal/run_control.h"
#include "waits/internal/shared_memory.h"
#include "waits/long_lived_wait.h"
#include "waits/postmaster_death.h"
#include "waits/signalfd_epoll_latch.h"
#include "waits/wait_dispatch.h"

namespace backendlab::waits {
namespace {

using internal::ChildReport;
using internal::Children;
using internal::kCountWarmup;
using internal::kMeasure;
using internal::kReapTimeoutMs;
using internal::kStop;
using internal::kWarmup;
using internal::kWarmupTime;
using internal::LoopCounters;
using internal::SharedArray;

// Every backend's latch: PostgreSQL's on Linux. Nobody sets it in this
// experiment; it is in every set, as MyLatch is in PostgreSQL's.
using BackendLatch = SignalfdEpollLatch;

constexpr size_t kLatenciesPerClient = size_t{1} << 18;

enum Role : size_t { kClient = 0, kBackend = 1, kRemote = 2 };

struct RunShared {
  std::atomic<int32_t> phase{kWarmup};
};

struct PairShared {
  BackendLatch::Shared latch;
  std::atomic<int64_t> latencies{0};
};

// The settings of one run that its children read.
struct WaitsRunSpec {
  int64_t counted_round_trips = 0;  // > 0: a counting pass of exactly this many per pair; 0: timed
  std::vector<std::string> count_names;
  int death_fd = -1;
};

struct WaitsRunFigures {
  double round_trips_per_second = 0;
  double user_us = 0, sys_us = 0, waits = 0, close_us = 0, close_share = 0;
  SyscallsPerOp syscalls;
};

std::string Errno(const char* what) { return absl::StrCat(what, ": ", std::strerror(errno)); }

// Blocking I/O of the clients and remotes, which model pgbench and a remote
// server: only the backends' waits are the experiment. False at EOF or on
// an error (errno; 0 at EOF).
bool WriteFully(int fd, const char* buf, size_t len) {
  while (len > 0) {
    const ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}
bool ReadFully(int fd, char* buf, size_t len) {
  while (len > 0) {
    const ssize_t n = recv(fd, buf, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;
      return false;
    }
    buf += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// A backend's read of a whole message through its set: 1 when it came, 0 at
// EOF, -1 on an error (the report says why).
template <WaitSet S>
int ReceiveMessage(S& set, int socket, char* buf, size_t len, ChildReport& report, const char* from) {
  size_t got = 0;
  while (got < len) {
    const Received r = set.Receive(socket, buf + got, len - got);
    if (r.bytes == 0) {
      if (got == 0) return 0;
      report.Fail(absl::StrCat("backend: ", from, " closed in the middle of a message"));
      return -1;
    }
    if (r.bytes < 0) {
      report.Fail(r.postmaster_died ? std::string("backend: the tool died")
                                    : absl::StrCat("backend: recv from ", from, ": ", std::strerror(r.error)));
      return -1;
    }
    got += static_cast<size_t>(r.bytes);
  }
  return 1;
}

template <WaitSet S>
bool SendMessage(S& set, int socket, const char* buf, size_t len, ChildReport& report, const char* to) {
  const int err = SendAll(set, socket, buf, len);
  if (err == 0) return true;
  report.Fail(err < 0 ? std::string("backend: the tool died")
                      : absl::StrCat("backend: send to ", to, ": ", std::strerror(err)));
  return false;
}

int Client(const RunShared& run, PairShared& pair, ChildReport& r, int sock, uint32_t* latencies, int64_t counted) {
  char request[kRequestBytes] = {};
  char response[kResponseBytes];
  const int64_t last = counted > 0 ? kCountWarmup + counted + 1 : INT64_MAX;
  int64_t seq = 0;
  while (seq < last && run.phase.load(std::memory_order_relaxed) != kStop) {
    const bool measuring = run.phase.load(std::memory_order_relaxed) == kMeasure;
    const int64_t start = measuring ? NowNs() : 0;
    ++seq;
    std::memcpy(request, &seq, sizeof seq);
    if (!WriteFully(sock, request, sizeof request) || !ReadFully(sock, response, sizeof response)) {
      r.Fail(errno == 0 ? std::string("client: the backend closed the connection") : Errno("client: send/recv"));
      return 1;
    }
    if (measuring) {
      const int64_t k = pair.latencies.fetch_add(1, std::memory_order_relaxed);
      if (latencies != nullptr && k < static_cast<int64_t>(kLatenciesPerClient)) {
        latencies[k] = static_cast<uint32_t>(std::min<int64_t>(NowNs() - start, UINT32_MAX));
      }
      ++r.measured_round_trips;
    }
  }
  r.round_trips = seq;
  close(sock);  // the backend's next wait reports EOF: its session ends
  return 0;
}

int Remote(ChildReport& r, int sock) {
  char request[kRequestBytes];
  char response[kResponseBytes] = {};
  while (ReadFully(sock, request, sizeof request)) {
    std::memcpy(response, request, sizeof(int64_t));
    if (!WriteFully(sock, response, sizeof response)) break;
    ++r.round_trips;
  }
  return 0;
}

// A backend's loop: requests from `front` through `front_set`; in the fdw
// shape each is forwarded to `remote` and its answer awaited through
// `remote_set` (the strategy measured) before the client gets it.
template <WaitSet Front, WaitSet Back>
int Serve(Front& front_set, int front, Back* remote_set, int remote, ChildReport& r, const WaitsRunSpec& spec,
          std::optional<LoopCounters>& counters) {
  char request[kRequestBytes];
  char response[kResponseBytes] = {};
  // Counted from the first counted request to the one after the last, each
  // taken before it is answered: exactly counted_round_trips round trips.
  const int64_t begin_at = spec.counted_round_trips > 0 ? kCountWarmup + 1 : -1;
  const int64_t end_at = spec.counted_round_trips > 0 ? kCountWarmup + spec.counted_round_trips + 1 : -1;
  const internal::CpuTimes cpu = internal::OwnCpuTimes();
  for (;;) {
    const int got = ReceiveMessage(front_set, front, request, sizeof request, r, "the client");
    if (got < 0) return 1;
    if (got == 0) break;
    int64_t seq;
    std::memcpy(&seq, request, sizeof seq);
    if (counters && seq == begin_at) counters->Begin();
    if (counters && seq == end_at) counters->End(r);
    if (remote_set != nullptr) {
      if (!SendMessage(*remote_set, remote, request, sizeof request, r, "the remote")) return 1;
      if (ReceiveMessage(*remote_set, remote, response, sizeof response, r, "the remote") != 1) {
        if (r.error[0] == '\0') r.Fail("backend: the remote closed the connection");
        return 1;
      }
    } else {
      std::memcpy(response, request, sizeof seq);
    }
    if (!SendMessage(front_set, front, response, sizeof response, r, "the client")) return 1;
    ++r.round_trips;
  }
  const internal::CpuTimes end = internal::OwnCpuTimes();
  r.user_ns = end.user_ns - cpu.user_ns;
  r.sys_ns = end.sys_ns - cpu.sys_ns;
  r.waits = front_set.waits() + (remote_set != nullptr ? remote_set->waits() : 0);
  r.close_ns = front_set.close_ns() + (remote_set != nullptr ? remote_set->close_ns() : 0);
  return 0;
}

// The backend: its latch, its sets, its counters, then Serve. In the direct
// shape the strategy waits on the client's socket; in the fdw shape on the
// remote's, and the client's socket has PostgreSQL's own FeBeWaitSet.
template <WaitSet S>
int Backend(PairShared& pair, ChildReport& r, int front, int remote, const WaitsRunSpec& spec) {
  absl::StatusOr<BackendLatch> latch = BackendLatch::Own(pair.latch, spec.death_fd);
  if (!latch.ok()) {
    r.Fail(absl::StrCat("backend: ", latch.status().message()));
    return 1;
  }
  std::optional<LoopCounters> counters;
  auto open_counters = [&] {
    if (spec.count_names.empty()) return true;
    absl::StatusOr<LoopCounters> c = LoopCounters::Open(spec.count_names);
    if (!c.ok()) r.Fail(absl::StrCat("backend: ", c.status().message()));
    if (c.ok()) counters = *std::move(c);
    return c.ok();
  };
  if (remote < 0) {
    absl::StatusOr<S> set = S::Create(*latch, spec.death_fd, front);
    if (!set.ok()) {
      r.Fail(absl::StrCat("backend: ", set.status().message()));
      return 1;
    }
    if (!open_counters()) return 1;
    return Serve<S, S>(*set, front, nullptr, -1, r, spec, counters);
  }
  absl::StatusOr<LongLivedWait<BackendLatch>> febe = LongLivedWait<BackendLatch>::Create(*latch, spec.death_fd, front);
  absl::StatusOr<S> set = S::Create(*latch, spec.death_fd, remote);
  for (const absl::Status& s : {febe.status(), set.status()}) {
    if (!s.ok()) {
      r.Fail(absl::StrCat("backend: ", s.message()));
      return 1;
    }
  }
  if (!open_counters()) return 1;
  return Serve(*febe, front, &*set, remote, r, spec, counters);
}

// A connected stream pair: [0] for one side, [1] for the other.
absl::StatusOr<std::pair<UniqueFd, UniqueFd>> Connect(Transport transport, int listener, const sockaddr_in& address) {
  if (transport == Transport::kUnix) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return absl::UnavailableError(Errno("socketpair"));
    return std::pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
  }
  UniqueFd a(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!a.valid()) return absl::UnavailableError(Errno("socket"));
  if (connect(a.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return absl::UnavailableError(Errno("connect to 127.0.0.1"));
  }
  UniqueFd b(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!b.valid()) return absl::UnavailableError(Errno("accept"));
  const int one = 1;
  for (int fd : {a.get(), b.get()}) {
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
      return absl::UnavailableError(Errno("setsockopt(TCP_NODELAY)"));
    }
  }
  return std::pair(std::move(a), std::move(b));
}

// A loopback listener on an ephemeral port, for the pairs' connections only.
absl::Status Listen(UniqueFd& listener, sockaddr_in& address, int backlog) {
  listener.Reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid()) return absl::UnavailableError(Errno("socket"));
  address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof address;
  if (bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listener.get(), backlog) != 0 ||
      getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &len) != 0) {
    return absl::UnavailableError(Errno("listen on 127.0.0.1"));
  }
  return absl::OkStatus();
}

template <WaitSet S>
absl::Status RunPairs(const WaitsExperimentOptions& options, int pairs, const WaitsRunSpec& base, Histogram* latency_ns,
                      WaitsRunFigures& out) {
  const bool counting = base.counted_round_trips > 0;
  const size_t roles = options.shape == Shape::kFdw ? 3 : 2;
  absl::StatusOr<SharedArray<RunShared>> run_memory = SharedArray<RunShared>::Create(1);
  absl::StatusOr<SharedArray<PairShared>> pair_memory = SharedArray<PairShared>::Create(static_cast<size_t>(pairs));
  absl::StatusOr<SharedArray<ChildReport>> reports = SharedArray<ChildReport>::Create(static_cast<size_t>(pairs) * roles);
  absl::StatusOr<SharedArray<uint32_t>> log =
      SharedArray<uint32_t>::Create(counting ? 0 : static_cast<size_t>(pairs) * kLatenciesPerClient);
  for (const absl::Status& s : {run_memory.status(), pair_memory.status(), reports.status(), log.status()}) {
    if (!s.ok()) return s;
  }
  RunShared& run = (*run_memory)[0];
  for (int i = 0; i < pairs; ++i) {
    if (absl::Status s = BackendLatch::InitShared((*pair_memory)[i].latch); !s.ok()) return s;
  }
  absl::StatusOr<PostmasterDeathPipe> death = PostmasterDeathPipe::Create();
  if (!death.ok()) return death.status();
  WaitsRunSpec spec = base;
  spec.death_fd = death->watch_fd();
  UniqueFd listener;
  sockaddr_in address{};
  if (options.transport == Transport::kTcp) {
    if (absl::Status s = Listen(listener, address, pairs * 2); !s.ok()) return s;
  }

  Children children;
  // Each pair's sockets are made just before its processes are forked and
  // closed in the tool just after: no process holds another pair's
  // descriptors (a copy would keep a connection open past its EOF).
  for (int i = 0; i < pairs && !StopRequested(); ++i) {
    absl::StatusOr<std::pair<UniqueFd, UniqueFd>> front = Connect(options.transport, listener.get(), address);
    if (!front.ok()) return front.status();
    std::pair<UniqueFd, UniqueFd> back;
    if (roles == 3) {
      absl::StatusOr<std::pair<UniqueFd, UniqueFd>> b = Connect(options.transport, listener.get(), address);
      if (!b.ok()) return b.status();
      back = *std::move(b);
    }
    PairShared& pair = (*pair_memory)[i];
    ChildReport* report = &(*reports)[static_cast<size_t>(i) * roles];
    uint32_t* latencies = counting ? nullptr : log->data() + static_cast<size_t>(i) * kLatenciesPerClient;
    // In a child: keep `keep`, close the rest of what the tool holds.
    auto only = [&](std::initializer_list<int> keep) {
      death->CloseOwnEnd();
      for (int fd : {listener.get(), front->first.get(), front->second.get(), back.first.get(), back.second.get()}) {
        if (fd >= 0 && std::find(keep.begin(), keep.end(), fd) == keep.end()) close(fd);
      }
    };
    absl::Status s = children.Start([&] {
      only({front->first.get()});
      return Client(run, pair, report[kClient], front->first.get(), latencies, spec.counted_round_trips);
    });
    if (s.ok()) {
      s = children.Start([&] {
        only({front->second.get(), back.first.get()});
        return Backend<S>(pair, report[kBackend], front->second.get(), back.first.get(), spec);
      });
    }
    if (s.ok() && roles == 3) {
      s = children.Start([&] {
        only({back.second.get()});
        return Remote(report[kRemote], back.second.get());
      });
    }
    if (!s.ok()) return s;
  }
  listener.Reset();
  auto stop = [&] { run.phase.store(kStop, std::memory_order_relaxed); };
  int64_t measured_ns = 0;
  int64_t timeout_ms = kReapTimeoutMs;
  if (!counting) {
    if (internal::SleepUnlessStopped(kWarmupTime)) {
      run.phase.store(kMeasure, std::memory_order_relaxed);
      const int64_t start = NowNs();
      internal::SleepUnlessStopped(options.duration);
      measured_ns = NowNs() - start;
    }
    stop();
  } else {
    timeout_ms += (spec.counted_round_trips + kCountWarmup) * pairs;  // a generous 1 ms per round trip
  }
  const absl::Status reaped =
      children.ReapAll(timeout_ms, "waits process", std::span<const ChildReport>(reports->data(), reports->size()), stop);
  if (StopRequested()) return StoppedStatus();
  if (!reaped.ok()) return reaped;

  std::vector<ChildReport> backends;
  int64_t measured = 0, served = 0, user = 0, sys = 0, waits = 0, close_ns = 0;
  for (int i = 0; i < pairs; ++i) {
    const ChildReport* r = &(*reports)[static_cast<size_t>(i) * roles];
    measured += r[kClient].measured_round_trips;
    served += r[kBackend].round_trips;
    user += r[kBackend].user_ns;
    sys += r[kBackend].sys_ns;
    waits += r[kBackend].waits;
    close_ns += r[kBackend].close_ns;
    backends.push_back(r[kBackend]);
  }
  if (counting) {
    out.syscalls = internal::SumSyscalls(spec.count_names, backends, spec.counted_round_trips * pairs);
    return absl::OkStatus();
  }
  const double trips = static_cast<double>(std::max<int64_t>(served, 1));
  out.round_trips_per_second = measured * 1e9 / static_cast<double>(std::max<int64_t>(measured_ns, 1));
  out.user_us = user / 1e3 / trips;
  out.sys_us = sys / 1e3 / trips;
  out.waits = waits / trips;
  out.close_us = close_ns / 1e3 / trips;
  out.close_share = sys > 0 ? static_cast<double>(close_ns) / static_cast<double>(sys) : 0;
  for (int i = 0; i < pairs; ++i) {
    const int64_t kept = std::min<int64_t>((*pair_memory)[i].latencies.load(), kLatenciesPerClient);
    const uint32_t* l = log->data() + static_cast<size_t>(i) * kLatenciesPerClient;
    for (int64_t k = 0; k < kept; ++k) latency_ns->Record(l[k]);
  }
  return absl::OkStatus();
}

absl::Status RunOne(const WaitsExperimentOptions& options, WaitStrategy strategy, int pairs, const WaitsRunSpec& spec,
                    Histogram* latency_ns, WaitsRunFigures& out) {
  return WithWaitStrategy<BackendLatch>(strategy, [&]<WaitSet S>() {
    return RunPairs<S>(options, pairs, spec, latency_ns, out);
  });
}

}  // namespace

absl::Status ValidateWaitsOptions(const WaitsExperimentOptions& o) {
  if (o.strategies.empty()) return absl::InvalidArgumentError("no wait strategy to measure");
  std::set<WaitStrategy> seen;
  for (WaitStrategy s : o.strategies) {
    if (!seen.insert(s).second) {
      return absl::InvalidArgumentError(absl::StrCat("wait strategy '", std::string(WaitStrategyName(s)), "' given twice"));
    }
  }
  if (o.pairs.empty()) return absl::InvalidArgumentError("`pairs`: no pair count");
  std::set<int> counts;
  for (int p : o.pairs) {
    if (p < 1 || p > 64) return absl::InvalidArgumentError(absl::StrCat("`pairs`: ", p, " is not in 1..64"));
    if (!counts.insert(p).second) return absl::InvalidArgumentError(absl::StrCat("`pairs`: ", p, " given twice"));
  }
  if (o.rounds < 1 || o.rounds > 1000) return absl::InvalidArgumentError("`rounds` must be 1..1000");
  if (o.duration < absl::Milliseconds(10) || o.duration > absl::Seconds(60)) return absl::InvalidArgumentError("`duration` must be 10ms..60s");
  if (o.counted_round_trips < 100 || o.counted_round_trips > 1'000'000) {
    return absl::InvalidArgumentError("counted round trips must be 100..10^6");
  }
  return absl::OkStatus();
}

absl::StatusOr<WaitsExperimentResult> RunWaitsExperiment(const WaitsExperimentOptions& options) {
  if (absl::Status s = ValidateWaitsOptions(options); !s.ok()) return s;
  InstallStopHandlers();
  struct Config {
    WaitStrategy strategy;
    int pairs;
  };
  std::vector<Config> configs;
  for (WaitStrategy s : options.strategies) {
    for (int p : options.pairs) configs.push_back({s, p});
  }
  const size_t n = configs.size();
  std::vector<std::vector<WaitsRunFigures>> runs(n);
  std::vector<Histogram> latencies(n);
  const WaitsRunSpec timed;
  absl::Status status = RunInterleaved("waits", options.rounds, n, [&](size_t i, int64_t) -> absl::Status {
    WaitsRunFigures f;
    absl::Status s = RunOne(options, configs[i].strategy, configs[i].pairs, timed, &latencies[i], f);
    if (s.ok()) runs[i].push_back(std::move(f));
    return s;
  });
  if (!status.ok()) return status;

  WaitsExperimentResult result;
  std::vector<WaitsRunFigures> counted(n);
  std::vector<std::string> names;
  if (options.count_syscalls) {
    result.syscalls_status = profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls);
    if (result.syscalls_status.ok()) names = internal::AvailableSyscallKinds(kWaitSyscallKinds);
  }
  if (!names.empty()) {
    WaitsRunSpec spec;
    spec.count_names = names;
    spec.counted_round_trips = options.counted_round_trips;
    // Held open here for the whole pass, so that each tracepoint stays
    // enabled: a child's open of one nobody else counts enables it anew,
    // which takes milliseconds each (the kernel waits for an RCU grace period).
    const absl::StatusOr<internal::LoopCounters> keep_enabled = internal::LoopCounters::Open(names);
    status = RunInterleaved("waits: counting system calls", 1, n, [&](size_t i, int64_t) {
      return RunOne(options, configs[i].strategy, configs[i].pairs, spec, nullptr, counted[i]);
    });
    if (!status.ok()) return status;
  }
  for (size_t i = 0; i < n; ++i) {
    WaitsRow row;
    row.strategy = configs[i].strategy;
    row.pairs = configs[i].pairs;
    for (const WaitsRunFigures& f : runs[i]) row.round_trips_per_second_by_round.push_back(f.round_trips_per_second);
    row.round_trips_per_second = Summarize(row.round_trips_per_second_by_round);
    row.round_trip_us = latencies[i].Summarize(1e-3);
    row.user_us = MedianOf(runs[i], [](const WaitsRunFigures& f) { return f.user_us; });
    row.sys_us = MedianOf(runs[i], [](const WaitsRunFigures& f) { return f.sys_us; });
    row.waits = MedianOf(runs[i], [](const WaitsRunFigures& f) { return f.waits; });
    row.close_us = MedianOf(runs[i], [](const WaitsRunFigures& f) { return f.close_us; });
    row.close_share = MedianOf(runs[i], [](const WaitsRunFigures& f) { return f.close_share; });
    if (!names.empty()) row.syscalls = counted[i].syscalls;
    result.rows.push_back(std::move(row));
  }
  for (WaitsRow& row : result.rows) {
    for (const WaitsRow& base : result.rows) {
      if (base.strategy != WaitStrategy::kLongLived || base.pairs != row.pairs) continue;
      if (&base == &row) {  // long-lived against itself: 1 by definition, no interval to give
        row.vs_long_lived = SelfRatio(static_cast<int>(row.round_trips_per_second_by_round.size()));
        continue;
      }
      const RatioEstimate r =
          PairedRatio(row.round_trips_per_second_by_round, base.round_trips_per_second_by_round, Better::kHigher);
      if (r.rounds > 0) row.vs_long_lived = r;
    }
  }
  return result;
}

}  // namespace backendlab::waits
