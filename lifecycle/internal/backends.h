// How the mock postmaster's backends run, one file per process model:
// forked_backends.cc (a process forked per connection, PostgreSQL's),
// thread_backends.cc (a thread of the postmaster's process per connection),
// pooled_backends.cc (a pool of processes forked before serving, each handed
// one connection at a time). The postmaster's loop (postmaster.cc) accepts,
// polls, reaps and stops through this interface alone; MakeBackends is the
// one place that reads which model a run asked for. Not for other modules.
#ifndef BACKENDLAB_LIFECYCLE_INTERNAL_BACKENDS_H_
#define BACKENDLAB_LIFECYCLE_INTERNAL_BACKENDS_H_

#include <poll.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "base/resource_usage.h"
#include "lifecycle/internal/protocol.h"

namespace backendlab::lifecycle::internal {

class Postmaster;

class Backends {
 public:
  virtual ~Backends() = default;

  // After the baseline forks, before serving: what the model builds before
  // any connection (a pool's members). A failure fails the run (Postmaster::Fail).
  virtual void Build() {}

  // Room for one more connection, and the slot it would take.
  virtual bool CanAccept() const = 0;
  virtual size_t FreeSlot() const = 0;

  // Slot's backend takes the connection on client_fd, whose descriptor is
  // the model's from here on; `before` is the postmaster's reading from
  // before it began (its cost is Postmaster::SetParentCost's). True if the
  // backend took it; false if it could not start (the run has failed).
  virtual bool Start(size_t slot, int client_fd, const ResourceSample& before) = 0;

  // Descriptors the loop polls for the model, appended to `fds`; Polled is
  // given them back (the same number, in the same order) after each poll.
  virtual void AddPollFds(std::vector<pollfd>& /*fds*/) const {}
  virtual void Polled(const pollfd* /*fds*/) {}
  // The poll's timeout while serving (-1: none).
  virtual int PollTimeoutMs() const { return -1; }

  // Reaps every backend process that has exited (SIGCHLD came, or a turn of
  // the loop ended).
  virtual void Reap() {}

  // Backends alive (a stopped loop ends once none is), and of them those
  // serving a connection.
  virtual size_t Live() const = 0;
  virtual size_t Serving() const { return Live(); }

  // The server's usage as the model completes it: `u` holds this process's
  // and its reaped children's (ProcessAndReaped).
  virtual void CompleteUsage(Message::Usage& /*u*/) const {}

  // The run stops accepting (a stop, or a failure).
  virtual void StopAccepting() {}
  // The grace after a stop is over: end every backend now.
  virtual void EndAll() = 0;
  // The loop failed: kill every backend process and wait for it.
  virtual void KillAll() {}
  // After the last backend, before the closing bare forks: what the model
  // sends last.
  virtual void Finish() {}
};

std::unique_ptr<Backends> MakeForkedBackends(Postmaster& pm);
std::unique_ptr<Backends> MakeThreadBackends(Postmaster& pm);
std::unique_ptr<Backends> MakePooledBackends(Postmaster& pm);

// The model the postmaster's configuration names (PostmasterConfig).
std::unique_ptr<Backends> MakeBackends(Postmaster& pm);

}  // namespace backendlab::lifecycle::internal

#endif  // BACKENDLAB_LIFECYCLE_INTERNAL_BACKENDS_H_
