// The clients of a fork-mode run, in the tool process: `--clients` sockets
// driven by one poll loop, each connecting, waiting for "ready", sending
// "terminate" and closing, like `pgbench -C` — with queries, sending each
// after "ready" and waiting for its answer first; and the reader of the
// postmaster's messages. Not for other modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_CLIENT_LOOP_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_CLIENT_LOOP_H_

#include <poll.h>

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

  // Before Run, with options.hold: opens the held connections, a few at a
  // time, and waits for each backend's "ready"; their time goes to
  // result.hold_open_ns. They stay open (watched by Run: one that ends is
  // an error) until CloseHeld.
  absl::Status OpenHeld();
  // After Run, with held connections: asks the postmaster for the server's
  // usage (kUsageByte on `control_fd`) and reads its messages until it
  // comes, sent once only held backends live.
  absl::Status AwaitUsage(int control_fd);
  // Ends the held connections (terminate, close); their backends exit.
  void CloseHeld();

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

  // The first measured connection's sequence number: the held ones and the
  // warm-up come before it (IsWarmup).
  int64_t first_measured() const { return options_.hold + options_.warmup; }
  // OK while every held connection is open; an error once one has ended.
  absl::Status CheckHeld(const std::vector<pollfd>& fds, size_t first) const;

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
  std::vector<int> held_;  // the held connections' sockets, once open
  bool usage_received_ = false;
};

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_CLIENT_LOOP_H_
