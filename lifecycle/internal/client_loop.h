// The clients of a fork-mode run, in the tool process: `--clients` sockets
// driven by one poll loop, each connecting, waiting for "ready", sending
// "terminate" and closing, like `pgbench -C` — with queries, sending each
// after "ready" and waiting for its answer first; and the reader of the
// postmaster's messages. Not for other modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_CLIENT_LOOP_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_CLIENT_LOOP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "lifecycle/cycle.h"

namespace backendlab::lifecycle::internal {

class ClientLoop {
 public:
  ClientLoop(const CycleOptions& options, const std::string& socket_path, int results_fd, CycleResult& result);

  // Runs until the measured connections are done, the duration is over, a
  // stop is requested (result.interrupted), or something fails for good: a
  // poll/socket/connect error that is not transient, or the postmaster
  // reporting one (the error names the call and errno). Closes every client.
  absl::Status Run();

  // Reads the postmaster's remaining messages until it closes the pipe (after
  // it was told to stop). The postmaster's failure, if it reported one.
  absl::Status DrainToEnd();

  // The postmaster closed its pipe before being told to stop.
  bool postmaster_gone() const { return postmaster_gone_; }
  // Connections the postmaster named (sent a sequence number for): every
  // one it accepted and forked a backend for, warm-up included.
  int64_t accepted() const { return accepted_; }

 private:
  struct Client {
    int fd = -1;
    int64_t started_ns = 0;
    int64_t sequence = -1;  // from the postmaster; -1 until received
    size_t got = 0;         // bytes of `greeting` received
    char greeting[sizeof(int64_t) + 1] = {};  // the sequence number, then "ready"
    int64_t ready_ns = 0;       // "ready" received (0: not yet)
    int64_t queries_left = 0;   // with queries: answers still to come
    int64_t query_sent_ns = 0;  // the query in flight
  };

  // Reads one message from the postmaster; false at EOF.
  bool DrainOne();
  absl::Status Connect(Client& c, bool& started);
  void Read(Client& c);
  // Sends the next query; false if the backend is gone.
  bool SendQuery(Client& c);
  void Finish(Client& c, bool ready, int64_t now);

  const CycleOptions& options_;
  const std::string& socket_path_;
  int results_fd_;
  CycleResult& result_;
  absl::Status postmaster_failure_;
  bool postmaster_gone_ = false;
  int64_t completed_ = 0;
  int64_t accepted_ = 0;
  int64_t measure_start_ns_ = -1;  // the first measured connection's connect(); -1: none yet
  int64_t last_complete_ns_ = 0;
};

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_CLIENT_LOOP_H_
