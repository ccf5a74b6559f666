// PgBouncer started, watched, drained and stopped by the tool.
#include "pgreal/pooler.h"

#include <libpq-fe.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "base/resource_usage.h"

namespace backendlab::pgreal {
namespace {

constexpr int kListenPort = 6432;  // names the socket file only: nothing listens on TCP
constexpr int64_t kPoolerStartTimeoutNs = 10'000'000'000;
constexpr int64_t kStopTimeoutNs = 10'000'000'000;

bool Executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// An admin console command, its error if any.
std::string AdminCommand(PGconn* conn, const std::string& command) {
  PGresult* r = PQexec(conn, command.c_str());
  std::string error;
  if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
    error = absl::StrCat(command, ": ", PQresultErrorMessage(r));
  }
  PQclear(r);
  return error;
}

}  // namespace

std::string Via::label() const { return mode == PoolMode::kSession ? "pgbouncer:session" : "pgbouncer:transaction"; }

absl::StatusOr<Via> ParseVia(std::string_view text) {
  Via via;
  if (text == "pgbouncer" || text == "pgbouncer:session") return via;
  if (text == "pgbouncer:transaction") {
    via.mode = PoolMode::kTransaction;
    return via;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "`via`: '", absl::CEscape(std::string(text)), "' is not pgbouncer, pgbouncer:session or pgbouncer:transaction"));
}

absl::StatusOr<std::vector<Via>> ParseVias(const std::vector<std::string>& texts) {
  std::vector<Via> vias;
  for (const std::string& text : texts) {
    absl::StatusOr<Via> via = ParseVia(text);
    if (!via.ok()) return via.status();
    for (const Via& seen : vias) {
      if (seen.mode == via->mode) return absl::InvalidArgumentError(absl::StrCat("`via`: ", via->label(), " given twice"));
    }
    vias.push_back(*via);
  }
  return vias;
}

std::string PoolerSocketDirectorySuffix(PoolMode mode) {
  return mode == PoolMode::kSession ? "/pooler-session" : "/pooler-transaction";
}

std::string PoolerSocketDirectorySuffix() {
  // CheckSocketRoom adds the longest socket name a server has; PgBouncer's
  // is as long: .s.PGSQL.<its port>.
  return PoolerSocketDirectorySuffix(PoolMode::kTransaction);
}

absl::StatusOr<std::string> FindPgBouncer(const std::string& path) {
  if (!path.empty()) {
    if (Executable(path)) return path;
    return absl::InvalidArgumentError(absl::StrCat("`pgbouncer`: ", path, " is not an executable file"));
  }
  const char* env = getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(env != nullptr ? env : "", ':')) {
    if (dir.empty()) continue;
    const std::string candidate = absl::StrCat(dir, "/pgbouncer");
    if (Executable(candidate)) return candidate;
  }
  if (Executable("/usr/sbin/pgbouncer")) return std::string("/usr/sbin/pgbouncer");
  return absl::FailedPreconditionError(
      "pgbouncer is not installed (Debian: apt-get install pgbouncer; tools/install-deps installs it)");
}

absl::StatusOr<std::unique_ptr<Pooler>> Pooler::Start(const PoolerOptions& options) {
  std::unique_ptr<Pooler> pooler(new Pooler());
  pooler->options_ = options;
  const std::string& dir = options.directory;
  // Made and filled as the tool's user, files created new (never through a
  // link), and handed to the server's user last: nothing the server's user
  // does meanwhile can make the tool write elsewhere.
  if (mkdir(dir.c_str(), 0700) != 0) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  pooler->pid_ = 0;  // from here on the destructor removes the directory
  const std::optional<internal::User>& user = options.user;

  // Trust on a Unix socket in a 0700 directory, as the server's own socket:
  // only the server's user (and root) can reach it. The user must still be
  // listed in the auth file. Server connections are kept while the pooler
  // runs (no idle timeout, a day's lifetime): the run counts them.
  const std::string ini = absl::StrCat(
      "[databases]\n",
      // Quoted as libpq quotes: the directory may hold spaces (TMPDIR).
      "postgres = host=", internal::ConninfoValue(options.server_socket_directory), " port=", options.server_port,
      " dbname=postgres user=postgres\n\n",
      "[pgbouncer]\n",
      "listen_port = ", kListenPort, "\n",
      "unix_socket_dir = ", dir, "\n",
      "unix_socket_mode = 0700\n",
      "auth_type = trust\n",
      "auth_file = ", dir, "/userlist.txt\n",
      "admin_users = postgres\n",
      "pool_mode = ", options.via.mode == PoolMode::kSession ? "session" : "transaction", "\n",
      "default_pool_size = ", options.pool_size, "\n",
      "min_pool_size = 0\n",
      "reserve_pool_size = 0\n",
      "max_client_conn = ", options.max_clients, "\n",
      "server_idle_timeout = 0\n",
      "server_lifetime = 86400\n",
      "logfile = ", dir, "/pgbouncer.log\n",
      "log_connections = 0\n",
      "log_disconnections = 0\n",
      "log_stats = 0\n");
  if (absl::Status s = internal::WriteNewFile(dir + "/userlist.txt", "\"postgres\" \"\"\n", user); !s.ok()) return s;
  if (absl::Status s = internal::WriteNewFile(dir + "/pgbouncer.ini", ini, user); !s.ok()) return s;
  if (user && chown(dir.c_str(), user->uid, user->gid) != 0) {
    return absl::InternalError(absl::StrCat("chown ", dir, ": ", std::strerror(errno)));
  }
  // PgBouncer's immediate shutdown is SIGTERM: what it gets should the tool
  // die without stopping it.
  internal::SpawnOptions spawn;
  spawn.user = user;
  spawn.log_path = dir + "/pgbouncer.out";
  spawn.pdeath_signal = SIGTERM;
  absl::StatusOr<pid_t> pid = internal::Spawn({options.binary, dir + "/pgbouncer.ini"}, spawn);
  if (!pid.ok()) return pid.status();
  pooler->pid_ = *pid;
  const std::string host = internal::ConninfoValue(dir);
  pooler->conninfo_ = absl::StrCat("host=", host, " port=", kListenPort, " user=postgres dbname=postgres");
  pooler->admin_conninfo_ =
      absl::StrCat("host=", host, " port=", kListenPort, " user=postgres dbname=pgbouncer connect_timeout=5");

  const int64_t deadline = NowNs() + kPoolerStartTimeoutNs;
  for (;;) {
    int status;
    if (waitpid(pooler->pid_, &status, WNOHANG) == pooler->pid_) {
      pooler->pid_ = 0;
      return absl::InternalError(absl::StrCat("pgbouncer did not start (", internal::DescribeWaitStatus(status),
                                              "); its log ends:", pooler->LogTail()));
    }
    // The admin console answers without a server connection.
    if (PQping(pooler->admin_conninfo_.c_str()) == PQPING_OK) break;
    if (StopRequested()) return StoppedStatus();
    if (NowNs() > deadline) {
      return absl::InternalError(
          absl::StrCat("pgbouncer did not accept connections within 10 s; its log ends:", pooler->LogTail()));
    }
    usleep(20'000);
  }
  return pooler;
}

Pooler::~Pooler() { (void)Stop(); }

std::string Pooler::LogTail(int lines) const {
  // Its log file once it has opened it; what it printed before that.
  const std::string log = options_.directory + "/pgbouncer.log";
  struct stat st;
  const bool logged = stat(log.c_str(), &st) == 0 && st.st_size > 0;
  return internal::FileTail(logged ? log : options_.directory + "/pgbouncer.out", lines);
}

absl::Status Pooler::CheckRunning(int64_t grace_ns) {
  if (pid_ <= 0) return absl::InternalError("pgbouncer is not running");
  int status;
  if (!internal::ReapedWithin(pid_, grace_ns, &status)) return absl::OkStatus();
  pid_ = 0;
  return absl::InternalError(absl::StrCat("pgbouncer died during the run (", internal::DescribeWaitStatus(status),
                                          "); its log ends:", LogTail()));
}

absl::Status Pooler::CloseServerConnections() {
  PGconn* conn = PQconnectdb(admin_conninfo_.c_str());
  std::string error;
  if (PQstatus(conn) != CONNECTION_OK) {
    error = PQerrorMessage(conn);
  } else {
    error = AdminCommand(conn, "KILL postgres");
    if (error.empty()) error = AdminCommand(conn, "RESUME postgres");
  }
  PQfinish(conn);
  if (error.empty()) return absl::OkStatus();
  if (absl::Status alive = CheckRunning(); !alive.ok()) return alive;
  return absl::InternalError(absl::StrCat("pgbouncer's admin console: ", error));
}

absl::Status Pooler::Stop() {
  absl::Status result;
  // Ended before it was told to (PgBouncer ends with status 1 on SIGTERM
  // too, so only a check before the signal tells the two apart).
  if (pid_ > 0) result = CheckRunning();
  if (pid_ > 0) {
    int status = 0;
    kill(pid_, SIGTERM);
    if (!internal::WaitForExit(pid_, kStopTimeoutNs, &status)) {
      kill(pid_, SIGKILL);
      internal::WaitForExit(pid_, kStopTimeoutNs, &status);
      result = absl::InternalError(absl::StrCat("pgbouncer did not stop on SIGTERM and was killed; its log ends:",
                                                LogTail()));
    }
    pid_ = 0;
  }
  if (pid_ == 0 && !options_.keep && !options_.directory.empty()) {
    if (absl::Status s = internal::RemoveTree(options_.directory); !s.ok() && result.ok()) result = s;
    pid_ = -1;
  }
  return result;
}

}  // namespace backendlab::pgreal
