// A real PostgreSQL server started and stopped by the tool: initdb into a
// private directory, a postmaster of our own (a child of the tool, in its own
// process group), reachable only by the user who ran the tool, and nothing of
// it left behind on any path.
#ifndef BACKENDLAB_PGREAL_SERVER_H_
#define BACKENDLAB_PGREAL_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/start_layout.h"
#include "base/names.h"
#include "pgreal/installation.h"
#include "pgreal/internal/processes.h"
#include "profiling/sample_file.h"

namespace backendlab::pgreal {

using Settings = std::vector<std::pair<std::string, std::string>>;

// How a client reaches a server the tool started: its Unix socket in the
// private directory (trust), TCP on 127.0.0.1 (scram-sha-256), or TCP with
// TLS (sslmode=require, then scram-sha-256): the cheapest connection there
// is, and a production one.
enum class Transport { kUnix, kTcp, kSsl };
inline constexpr NamedValue<Transport> kTransportNames[] = {
    {Transport::kUnix, "unix"}, {Transport::kTcp, "tcp"}, {Transport::kSsl, "tcp+ssl"}};
inline std::string_view TransportName(Transport t) { return NameOf(t, kTransportNames); }

struct ServerOptions {
  Installation installation;
  // As root the server runs as this user (PostgreSQL refuses root); ignored
  // otherwise, where it runs as the tool's own user.
  std::string run_as = "postgres";
  int64_t shared_buffers_bytes = 128LL << 20;
  int max_connections = 20;
  // A TCP listener on 127.0.0.1 too (password authentication, scram-sha-256);
  // without it the server listens only on a Unix socket in its private
  // directory.
  bool tcp = false;
  // With tcp: ssl=on, with a throw-away certificate and key made for this
  // server in its directory (RSA 2048, self-signed, mode 0600, the
  // server's user's), as Debian's snakeoil certificate is.
  bool ssl = false;
  // --set NAME=VALUE: applied after (and so over) the defaults below.
  Settings overrides;
  // Leave the directory (data, log) in place after the stop.
  bool keep = false;
  // The built-in sampler inside the server (pg --profile=builtin), at this
  // many samples per second of each process's CPU time; 0: none. The
  // sampler library is copied into the server's directory (so its user can
  // read it wherever the build tree is) and LD_PRELOADed into the
  // postmaster, with a sample file beside it (profiling/sample_file.h);
  // both go with the directory.
  int builtin_sampler_hz = 0;
  // A what-if (pgreal/what_if.h): its name ("" for the stock server), and
  // the library it LD_PRELOADs into the postmaster ("" for none), copied
  // into the server's directory like the sampler's. The start fails, with
  // the log's tail, unless the library is mapped in the postmaster and,
  // when `preload_applied_line` is given, the log holds that line.
  std::string what_if;
  std::string preload;
  std::string preload_applied_line;
  // The start's layout (base/start_layout.h) drawn from this seed: an
  // unused environment variable of its env_bytes in the postmaster's
  // environment, and its name_chars more in the directory's name (as many
  // as leave the longest socket path within sun_path). The kernel draws the
  // addresses at exec. Unset: neither.
  std::optional<uint64_t> start_seed;
};

// The sample file's room: 2^18 samples (138 MB, sparse: only the pages
// written take space) hold 17 minutes of one CPU at 250 samples a second,
// the most a CPU-time timer gives on a CONFIG_HZ=250 kernel.
inline constexpr uint32_t kBuiltinSampleCapacity = 1u << 18;

// The settings a measurement runs with, in the order they are passed
// (`postgres -c NAME=VALUE`): the measurement's own (fsync, autovacuum,
// huge pages and logging off, max_connections, shared_buffers; before 12
// max_wal_senders 0, which would otherwise exceed max_connections) then the
// overrides. Listening and sockets are not among them: the server sets those
// from its directory.
Settings MeasurementSettings(const ServerOptions& options);

// InvalidArgument for a NAME=VALUE whose name is not a setting's name
// (letters, digits, '_' and '.'), whose value holds a control character (a
// newline would end the setting early), or that sets what the tool owns:
// its privacy and bookkeeping (port, listen_addresses,
// unix_socket_directories, unix_socket_permissions, data_directory,
// hba_file, ident_file, config_file) or what a run's rows are labelled and
// sized by (shared_buffers, max_connections, ssl and its files).
absl::Status ValidateOverride(const std::string& name, const std::string& value);

// InvalidArgument, before anything is made, when TMPDIR is too long for the
// server's Unix socket (sockaddr_un's 108 bytes) to fit in a directory the
// tool makes there, `suffix` (a path under that directory, such as a
// pooler's socket) included.
absl::Status CheckSocketRoom(const std::string& suffix = "");

// A library a server preloads (a what-if's, the built-in sampler) is copied
// into the server's directory, under a name without spaces or colons, and
// named in LD_PRELOAD, which ld.so splits at both with no way to quote
// either: TMPDIR must hold neither. InvalidArgument naming it otherwise,
// before anything is made.
absl::Status CheckPreloadRoom();

class Server {
 public:
  // initdb (or a copy of `template_data`, a data directory made by an earlier
  // initdb of the same installation: much faster), then the postmaster on a
  // free port; returns once it accepts connections. Errors: InvalidArgument
  // for a user that does not exist or a directory the server's user cannot
  // reach; Internal with the last lines of the log when initdb or the start
  // fails; Cancelled on a stop request. Nothing is left on any error.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       const std::string& template_data = "");

  // Start in two steps: the data directory alone (initdb or the copy), which
  // may serve as another's template before its own postmaster runs; then the
  // postmaster. Same errors as Start.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options,
                                                        const std::string& template_data = "");
  absl::Status StartPostmaster();
  // Before StartPostmaster: the huge pages its main shared memory will take
  // with its settings (`postgres -C shared_memory_size_in_huge_pages`, 15+).
  // FailedPrecondition when the server says it cannot use huge pages here.
  absl::StatusOr<int64_t> HugePagesNeeded();
  // Before StartPostmaster: the main shared memory it will map with its
  // settings, bytes (`postgres -C shared_memory_size`, 15+; 0 before 15,
  // which cannot say).
  absl::StatusOr<int64_t> SharedMemoryBytes();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();  // Stop(), errors ignored

  // A fast shutdown, as `pg_ctl stop -m fast` does (SIGINT, then wait), with
  // SIGQUIT and then SIGKILL if it does not end, the shared memory removed if
  // it had to be killed, then the directory removed unless `keep` (after
  // which directory() is empty and kept_directory() names it). Idempotent.
  // Should the tool be killed instead, the directory goes all the same,
  // once the postmaster has left (base/private_dir.h's watchdog).
  absl::Status Stop();

  // OK while the postmaster runs; Internal with its exit status and the last
  // lines of its log once it has died. `grace_ns`: after a failed
  // connection, how long to wait for a death in progress (a killed process
  // closes its sockets before its parent can reap it).
  absl::Status CheckRunning(int64_t grace_ns = 0);

  pid_t postmaster_pid() const { return pid_; }
  // libpq's connection string: host (the socket directory, or 127.0.0.1 for
  // the TCP transports, with the password and sslmode), port, user, dbname.
  // A TCP transport of a server started without tcp, or ssl without ssl,
  // is the Unix socket's.
  std::string conninfo(Transport transport = Transport::kUnix) const;
  const std::string& directory() const { return dir_; }
  // With `keep`, after Stop: where the directory was left; empty otherwise.
  const std::string& kept_directory() const { return kept_; }
  std::string data_directory() const { return dir_ + "/data"; }
  const Settings& settings() const { return settings_; }
  int port() const { return port_; }
  // The built-in sampler's file, with builtin_sampler_hz; nullptr otherwise.
  profiling::SampleFile* sample_file() { return sample_file_ ? &*sample_file_ : nullptr; }
  // The user the server runs as when the tool is root; none otherwise.
  const std::optional<internal::User>& user() const { return user_; }
  // ServerOptions::what_if: "" for the stock server.
  const std::string& what_if() const { return options_.what_if; }
  // The server's log (its stderr).
  std::string log_path() const { return dir_ + "/server.log"; }
  // The last lines of the server's log, each prefixed "  | ".
  std::string LogTail(int lines = 15) const;

 private:
  Server() = default;
  absl::Status Launch();
  // `postgres -C NAME` with the server's settings: a runtime-computed
  // setting's value, as a number.
  absl::StatusOr<int64_t> RuntimeComputed(const std::string& name);
  // A copy of `source`, owned by the server's user, in its directory (the
  // build tree or the user's may be closed to that user); its path.
  absl::StatusOr<std::string> CopyIntoDirectory(const std::string& source, const std::string& name,
                                                const std::string& what);
  // Copies the sampler library into the directory (once) and makes a new
  // sample file for this start; the spawn options that load it after
  // `preload` (a colon-separated list).
  absl::Status PrepareSampler(const std::string& preload, internal::SpawnOptions& spawn);
  // After the start: the what-if's library is loaded and says it applied.
  absl::Status CheckPreloaded();

  ServerOptions options_;
  std::optional<internal::User> user_;  // the server's user when the tool is root, looked up once
  std::string password_;
  std::string dir_;
  std::string kept_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string conninfo_;      // the Unix socket's
  std::string tcp_conninfo_;  // with tcp, sslmode left out
  Settings settings_;
  bool keep_ = false;
  int shm_id_ = -1;  // the System V segment postmaster.pid names, for a kill's clean-up
  std::string sampler_library_;  // the copy in the directory, once made
  StartLayout layout_;           // ServerOptions::start_seed's, or none
  std::string preload_copy_;     // the what-if's library's copy, once made
  std::optional<profiling::SampleFile> sample_file_;
};

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_SERVER_H_
