// A connection pooler (PgBouncer) in front of a server the tool started:
// started in a private directory beside the server's, listening on a Unix
// socket there only, stopped and removed on every path — as the server is.
#ifndef BACKENDLAB_PGREAL_POOLER_H_
#define BACKENDLAB_PGREAL_POOLER_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pgreal/internal/processes.h"

namespace backendlab::pgreal {

enum class PoolMode { kSession, kTransaction };

// --via=pgbouncer[:session|:transaction]: a pooler and its pool mode.
struct Via {
  PoolMode mode = PoolMode::kSession;
  std::string label() const;  // "pgbouncer:session"
  bool operator==(const Via&) const = default;
};

// "pgbouncer" (session), "pgbouncer:session", "pgbouncer:transaction";
// InvalidArgument otherwise, naming what is accepted.
absl::StatusOr<Via> ParseVia(std::string_view text);
// Each of a --via list; a pool mode named twice ("pgbouncer,pgbouncer:session")
// is InvalidArgument.
absl::StatusOr<std::vector<Via>> ParseVias(const std::vector<std::string>& texts);

// The pgbouncer binary: `path` if given (it must be executable), else the
// first on PATH, else /usr/sbin/pgbouncer (Debian's, not on a user's PATH).
// InvalidArgument naming how to get it when there is none.
absl::StatusOr<std::string> FindPgBouncer(const std::string& path);

// A pooler's directory inside its server's, "/pooler-session" or
// "/pooler-transaction"; without a mode, the longest of them with the name
// of the socket in it (for CheckSocketRoom).
std::string PoolerSocketDirectorySuffix(PoolMode mode);
std::string PoolerSocketDirectorySuffix();

struct PoolerOptions {
  Via via;
  std::string binary;     // FindPgBouncer's
  std::string directory;  // created here, 0700, owned by `user`; its parent must be reachable by it
  std::optional<internal::User> user;  // as root: the server's user (PgBouncer refuses root)
  std::string server_socket_directory;
  int server_port = 0;
  int pool_size = 1;       // server connections per pool: --clients
  int max_clients = 10;    // client connections it accepts
  bool keep = false;       // leave the directory (config, log)
};

class Pooler {
 public:
  // Writes the configuration (Unix socket only, in `directory`; trust
  // authentication there, as the server's socket has; the server reached
  // through its own socket), starts PgBouncer as the server's user in its
  // own process group (SIGTERM should the tool die) and returns once it
  // accepts connections. Errors: Internal with its log's last lines when it
  // does not start; Cancelled on a stop request. Nothing is left on any error.
  static absl::StatusOr<std::unique_ptr<Pooler>> Start(const PoolerOptions& options);
  ~Pooler();
  Pooler(const Pooler&) = delete;
  Pooler& operator=(const Pooler&) = delete;

  // Immediate shutdown (SIGTERM), SIGKILL after 10 s; the directory removed
  // unless `keep`. An error if it had died or would not stop.
  absl::Status Stop();
  // OK while it runs; Internal with its log's last lines once it has died;
  // `grace_ns` as Server::CheckRunning's.
  absl::Status CheckRunning(int64_t grace_ns = 0);
  // Drops every server connection it holds now (admin console: KILL, then
  // RESUME), so that the server's pooled backends exit and are reaped.
  absl::Status CloseServerConnections();

  pid_t pid() const { return pid_; }
  const std::string& conninfo() const { return conninfo_; }
  std::string LogTail(int lines = 10) const;

 private:
  Pooler() = default;

  PoolerOptions options_;
  pid_t pid_ = -1;
  std::string conninfo_;
  std::string admin_conninfo_;
};

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_POOLER_H_
