// The client side of a real-server run: what `pgbench -C` does, without
// pgbench — per connection a non-blocking libpq connect, an optional query,
// and PQfinish, with --clients connections in flight at once over poll().
#ifndef BACKENDLAB_PGREAL_CONNECT_LOOP_H_
#define BACKENDLAB_PGREAL_CONNECT_LOOP_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/histogram.h"
#include "base/resource_usage.h"

namespace backendlab::pgreal {

// The most connections a loop keeps in flight: each is a server backend
// (max_connections is set above it) and a client socket in the tool.
inline constexpr int kMaxClients = 1000;

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

// The major version of the server `conninfo` reaches (one connection).
// Internal with libpq's message when it cannot connect.
absl::StatusOr<int> ServerMajorVersion(const std::string& conninfo);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_CONNECT_LOOP_H_
