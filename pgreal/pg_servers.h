// The servers of a pg run, for a caller that interleaves their rounds with
// other work (`compare --with-pg`) or runs them alone (RunPg): started (or
// the existing one named), measured one loop at a time, stopped on every
// path — by Finish, or by the destructor whatever happened before.
#ifndef BACKENDLAB_PGREAL_PG_SERVERS_H_
#define BACKENDLAB_PGREAL_PG_SERVERS_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pgreal/huge_pages.h"
#include "pgreal/pg_run.h"
#include "pgreal/pooler.h"
#include "pgreal/server.h"

namespace backendlab::pgreal {

class PgServers {
 public:
  // Plans every row (a target per server x via x transport x clients x
  // hold), creates every server (one initdb per installation, copies of its
  // data directory for the other sizes, what-ifs and copies), reserves the
  // huge pages the huge-pages servers need, then starts the postmasters and
  // the poolers. Errors as RunPg's; nothing is left on any of them.
  static absl::StatusOr<std::unique_ptr<PgServers>> Start(const PgRunOptions& options);
  ~PgServers();
  PgServers(const PgServers&) = delete;
  PgServers& operator=(const PgServers&) = delete;

  size_t size() const { return result_.targets.size(); }
  const PgTargetResult& target(size_t i) const { return result_.targets[i]; }
  const std::vector<PgTargetResult>& targets() const { return result_.targets; }
  // Target i's postmaster (options.postmaster_pid for an existing server, 0
  // if none) and data directory ("" for an existing server).
  pid_t postmaster_pid(size_t i) const;
  std::string data_directory(size_t i) const;
  // One measured loop against server i (options.loop), its figures added to
  // target(i). A server found dead is an error with its log's last lines.
  absl::Status Measure(size_t i);
  // The recorded profile pass of every server (ProfileServer,
  // BuiltinRecording); with `only_clients` > 0, of the targets with that
  // many clients alone.
  absl::Status Profile(int only_clients = 0);
  // Stops every server; the rows (their statistics not yet computed), or
  // the first error of a stop.
  absl::StatusOr<PgResult> Finish();

 private:
  explicit PgServers(const PgRunOptions& options) : options_(options) {}
  absl::Status PlanExisting();
  absl::Status CreateServers();
  absl::Status ReserveHugePages();
  absl::Status StartPoolers(const std::string& pgbouncer);
  absl::Status StopAll();

  PgRunOptions options_;
  PgResult result_;
  std::vector<std::unique_ptr<Server>> servers_;  // empty for an existing server
  std::vector<bool> huge_pages_;                  // server -> it runs with huge pages
  std::vector<size_t> server_of_;                 // target -> its server in servers_
  std::vector<std::unique_ptr<Pooler>> poolers_;  // target -> its pooler, null when direct
  std::vector<int64_t> log_offsets_;              // server -> how far its log has been read
  std::unique_ptr<HugePageReservation> reserved_;
};

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_PG_SERVERS_H_
