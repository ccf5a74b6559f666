// The client side of a real-server run: what `pgbench -C` does, without
// pgbench — per connection a non-blocking libpq connect, an optional query,
// and PQfinish, with --clients connections in flight at once over poll().
#ifndef BACKENDLAB_PGREAL_CONNECT_LOOP_H_
#define BACKENDLAB_PGREAL_CONNECT_LOOP_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/histogram.h"
#include "base/resource_usage.h"

struct pg_conn;  // libpq's PGconn

namespace backendlab::pgreal {

// The most connections a run holds open beside its loop (pg --hold): each a
// backend and a socket in the tool; PostgreSQL's max_connections goes to
// 262143.
inline constexpr int64_t kMaxHold = 100'000;

struct LoopOptions {
  std::string conninfo;
  int clients = 1;
  // Measured connections; or, when 0, as many as fit in `duration`.
  int64_t connections = 0;
  absl::Duration duration = absl::ZeroDuration();
  // Connections made first and left out of every figure.
  int64_t warmup = 0;
  std::string query;  // sent once per connection when not empty
  // Called with the connections done so far, at most every 100 ms.
  std::function<void(int64_t)> progress;
};

struct LoopResult {
  int64_t connections = 0;   // measured, completed (connect, query, finish)
  Histogram connect_ns;      // PQconnectStart to CONNECTION_OK
  Histogram connection_ns;   // PQconnectStart to PQfinish's return
  int64_t wall_ns = 0;       // of the measured connections
  ResourceSample client;     // the tool's own CPU and faults over them
  double connections_per_second() const { return wall_ns > 0 ? connections * 1e9 / wall_ns : 0; }
};

// Runs the loop. A connection or query that fails ends the run: Internal with
// libpq's message (one line). Cancelled on a stop request, every connection
// closed.
absl::StatusOr<LoopResult> RunConnectLoop(const LoopOptions& options);

// Idle connections kept open beside a loop (`pg --hold`): each a backend of
// the server that lives, idle in its wait for a query, until Close or the
// destructor, which end every one of them (PQfinish).
class HeldConnections {
 public:
  // Opens `n` connections to `conninfo`, `in_flight` at a time (each as the
  // loop opens one), timed from the first start to the last one's
  // CONNECTION_OK. A failure is Internal with libpq's message and how many
  // were open; Cancelled on a stop request; every connection made so far is
  // closed on either. `progress` as LoopOptions's.
  static absl::StatusOr<HeldConnections> Open(const std::string& conninfo, int64_t n, int in_flight,
                                              const std::function<void(int64_t)>& progress = nullptr);
  HeldConnections() = default;
  HeldConnections(HeldConnections&& other) noexcept : conns_(std::move(other.conns_)), open_ns_(other.open_ns_) {
    other.conns_.clear();
  }
  HeldConnections& operator=(HeldConnections&& other) noexcept;
  HeldConnections(const HeldConnections&) = delete;
  HeldConnections& operator=(const HeldConnections&) = delete;
  ~HeldConnections() { Close(); }

  int64_t size() const { return static_cast<int64_t>(conns_.size()); }
  int64_t open_ns() const { return open_ns_; }
  // The server process of each (PQbackendPID).
  std::vector<pid_t> BackendPids() const;
  // OK while every one is open and quiet; Internal saying how many the
  // server closed (an idle backend sends nothing unasked: anything to read,
  // or the end of the stream, is its goodbye).
  absl::Status CheckOpen() const;
  void Close();

 private:
  std::vector<pg_conn*> conns_;
  int64_t open_ns_ = 0;
};

// The major version of the server `conninfo` reaches (one connection).
// Internal with libpq's message when it cannot connect.
absl::StatusOr<int> ServerMajorVersion(const std::string& conninfo);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_CONNECT_LOOP_H_
