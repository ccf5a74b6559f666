// Starting, watching and stopping a real PostgreSQL server of our own.
#include "pgreal/server.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/interleaved.h"
#include "base/interrupt.h"
#include "base/ld_preload.h"
#include "base/processes.h"
#include "base/private_dir.h"
#include "base/resource_usage.h"
#include "base/start_layout.h"
#include "pgreal/internal/processes.h"
#include "pgreal/pooler.h"

namespace backendlab::pgreal {
namespace {

using internal::User;

// The command that makes a server's throw-away certificate (Debian's
// openssl, which PostgreSQL's packages depend on).
constexpr char kOpenssl[] = "/usr/bin/openssl";
constexpr int kStartAttempts = 5;         // ports tried when the chosen one is taken meanwhile
constexpr int64_t kStartTimeoutNs = 60'000'000'000;
constexpr int64_t kFastStopTimeoutNs = 60'000'000'000;  // a shutdown checkpoint, fsync off
constexpr int64_t kQuitTimeoutNs = 10'000'000'000;

// The settings the tool owns: a --set of one would break the privacy or the
// bookkeeping of the run, or measure one configuration under the label of
// another. Each with what sets it instead.
struct OwnedSetting {
  const char* name;
  const char* instead;
};
constexpr OwnedSetting kOwned[] = {
    {"port", "a free port"},
    {"listen_addresses", "a private socket directory; `tcp` for a TCP listener on 127.0.0.1"},
    {"unix_socket_directories", "a private socket directory"},
    {"unix_socket_permissions", "a private socket directory"},
    {"data_directory", "a private data directory"},
    {"hba_file", "a private data directory"},
    {"ident_file", "a private data directory"},
    {"config_file", "a private data directory"},
    {"shared_buffers", "`shared_buffers`, which each row is labelled by"},
    {"max_connections", "`clients` and `hold` (max_connections is the most held + the most clients + 5)"},
    {"ssl", "`ssl`=on, with `tcp` (a row of its own beside the Unix socket's and plain TCP's)"},
    {"ssl_cert_file", "`ssl`=on, which makes a throw-away certificate"},
    {"ssl_key_file", "`ssl`=on, which makes a throw-away key"},
};

// The longest name PostgreSQL gives a socket in its directory: /.s.PGSQL.PORT.
constexpr char kLongestSocketName[] = "/.s.PGSQL.65535";
// A server's directory: TempRoot()/<prefix>.XXXXXX (MakePrivateDir).
constexpr char kDirectoryPrefix[] = "backendlab-pg";
constexpr size_t kDirectoryNameBytes = 1 + sizeof kDirectoryPrefix - 1 + 7;
// The unused variable a randomised start's environment size is made of.
constexpr char kStartPadVariable[] = "BACKENDLAB_START_PAD";

// A port nobody listens on at this moment (the kernel's choice); the server
// may still lose it to another process before it binds, so Start retries.
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  if (port < 0) return absl::InternalError(absl::StrCat("cannot find a free port: ", std::strerror(errno)));
  return port;
}

std::string RandomPassword() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  std::string hex;
  for (unsigned char b : bytes) absl::StrAppendFormat(&hex, "%02x", b);
  return hex;
}

std::string SizeSetting(int64_t bytes) {
  if (bytes % (1LL << 30) == 0) return absl::StrCat(bytes >> 30, "GB");
  if (bytes % (1LL << 20) == 0) return absl::StrCat(bytes >> 20, "MB");
  return absl::StrCat(bytes >> 10, "kB");
}

}  // namespace

Settings MeasurementSettings(const ServerOptions& options) {
  Settings s = {
      {"shared_buffers", SizeSetting(options.shared_buffers_bytes)},
      {"max_connections", absl::StrCat(options.max_connections)},
      // Nothing of a connect/disconnect loop is written, but a checkpoint or
      // a sync would land in some round and not another.
      {"fsync", "off"},
      {"autovacuum", "off"},
      // The first touch of shared memory would differ with huge pages.
      {"huge_pages", "off"},
      // A log line per connection costs the backend a write.
      {"log_connections", "off"},
      {"log_disconnections", "off"},
      {"log_checkpoints", "off"},
      {"logging_collector", "off"},
      // Dynamic shared memory as files in the data directory, not in
      // /dev/shm: a server that is killed leaves nothing outside its
      // directory, which the tool removes. No connection of the loop uses
      // dynamic shared memory.
      {"dynamic_shared_memory_type", "mmap"},
  };
  // Before 12 the WAL senders' slots came out of max_connections (10 by
  // default, more than a run's clients + 5): such a server refuses to
  // start. No connection of the loop replicates.
  if (options.installation.major > 0 && options.installation.major < 12) s.emplace_back("max_wal_senders", "0");
  for (const auto& [name, value] : options.overrides) {
    bool replaced = false;
    for (auto& [n, v] : s) {
      if (n == name) {
        v = value;
        replaced = true;
      }
    }
    if (!replaced) s.emplace_back(name, value);
  }
  return s;
}

absl::Status ValidateOverride(const std::string& name, const std::string& value) {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
                          std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("`set`: '", name, "' is not a setting name"));
  }
  for (const OwnedSetting& owned : kOwned) {
    if (absl::AsciiStrToLower(name) == owned.name) {
      return absl::InvalidArgumentError(absl::StrCat("`set`: ", owned.name, " is set by the tool: ", owned.instead));
    }
  }
  for (const char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat("`set`: the value of ", name, " holds a control character"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSocketRoom(const std::string& suffix) {
  const std::string root = TempRoot();
  const size_t longest = root.size() + kDirectoryNameBytes + suffix.size() + std::strlen(kLongestSocketName);
  if (longest >= sizeof(sockaddr_un{}.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TMPDIR (", root, ") is too long: a server's socket there would take ", longest, " bytes of the ",
        sizeof(sockaddr_un{}.sun_path) - 1, " a Unix socket's path may have; set TMPDIR to a shorter directory"));
  }
  return absl::OkStatus();
}

namespace {

// Up to `wanted` more characters in a server's directory name: as many as
// leave its longest socket path, a pooler's under it included, within
// sun_path (CheckSocketRoom has checked that it fits without them).
size_t NameCharsThatFit(int wanted) {
  const size_t longest = TempRoot().size() + kDirectoryNameBytes + PoolerSocketDirectorySuffix().size() +
                         std::strlen(kLongestSocketName);
  const size_t room = longest < sizeof(sockaddr_un{}.sun_path) - 1 ? sizeof(sockaddr_un{}.sun_path) - 1 - longest : 0;
  return std::min(static_cast<size_t>(wanted), room);
}

}  // namespace

absl::Status CheckPreloadRoom() {
  const std::string root = TempRoot();
  if (root.find_first_of(kLdPreloadSeparators) == std::string::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "TMPDIR (", root, ") holds a space or a colon, where ld.so splits LD_PRELOAD's list with no way to quote either: ",
      "the libraries a server preloads are copied into its directory there; set TMPDIR to a directory without spaces or colons"));
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, const std::string& template_data) {
  absl::StatusOr<std::unique_ptr<Server>> server = Create(options, template_data);
  if (!server.ok()) return server.status();
  if (absl::Status s = (*server)->StartPostmaster(); !s.ok()) return s;
  return server;
}

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options, const std::string& template_data) {
  if (options.ssl && !options.tcp) return absl::InvalidArgumentError("ssl goes over TCP: a server with ssl needs tcp");
  std::optional<User> user;
  if (geteuid() == 0) {
    absl::StatusOr<User> u = internal::LookUpUser(options.run_as);
    if (!u.ok()) return u.status();
    user = *u;
  }
  std::unique_ptr<Server> server(new Server());
  server->options_ = options;
  server->user_ = user;
  server->keep_ = options.keep;
  if (absl::Status s = CheckSocketRoom(); !s.ok()) return s;
  if (!options.preload.empty() || options.builtin_sampler_hz > 0) {
    if (absl::Status s = CheckPreloadRoom(); !s.ok()) return s;
  }
  // Watched from the start (should the tool be killed, the watchdog removes
  // it), unless it is to be kept.
  const StartLayout layout = options.start_seed ? DrawStartLayout(*options.start_seed) : StartLayout{};
  server->layout_ = layout;
  absl::StatusOr<std::string> made =
      MakePrivateDir(kDirectoryPrefix + std::string(NameCharsThatFit(layout.name_chars), '_'));
  if (!made.ok()) return made.status();
  const std::string dir = *made;
  if (options.keep) UnwatchDirectory(dir);
  server->dir_ = dir;  // from here on the destructor removes it
  if (user && chown(dir.c_str(), user->uid, user->gid) != 0) {
    return absl::InternalError(absl::StrCat("chown ", dir, ": ", std::strerror(errno)));
  }
  internal::SpawnOptions as_user;
  as_user.user = user;
  as_user.pdeath_signal = SIGKILL;
  if (user && !internal::RunToEnd({"/usr/bin/test", "-w", dir, "-a", "-x", dir}, as_user).ok()) {
    if (StopRequested()) return StoppedStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("user ", user->name, " (the server's: `run_as`) cannot enter ", dir,
                     ": a parent directory is closed to it; set TMPDIR to a directory it can reach, e.g. /tmp"));
  }

  const std::string data = dir + "/data";
  const std::string password = RandomPassword();
  if (template_data.empty()) {
    const std::string pwfile = dir + "/pwfile";
    if (absl::Status s = internal::WriteNewFile(pwfile, password + "\n", user); !s.ok()) return s;
    // Trust on the Unix socket, which lives in a 0700 directory: only the
    // server's user (and root) can reach it. A password on TCP, never trust.
    as_user.log_path = dir + "/initdb.log";
    absl::Status s = internal::RunToEnd({options.installation.bindir + "/initdb", "-D", data, "-U", "postgres",
                                         "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + pwfile,
                                         "-E", "UTF8", "--locale=C", "-N"},
                                        as_user);
    unlink(pwfile.c_str());
    if (absl::IsCancelled(s)) return s;
    if (!s.ok()) {
      return absl::InternalError(absl::StrCat("initdb failed (", s.message(), "); its log ends:",
                                              internal::FileTail(as_user.log_path, 15)));
    }
  } else {
    as_user.log_path = dir + "/copy.log";
    absl::Status s = internal::RunToEnd({"/bin/cp", "-a", template_data, data}, as_user);
    if (absl::IsCancelled(s)) return s;
    if (!s.ok()) {
      return absl::InternalError(absl::StrCat("copying the data directory failed (", s.message(), ")",
                                              internal::FileTail(as_user.log_path, 5)));
    }
  }
  server->password_ = password;
  server->settings_ = MeasurementSettings(options);
  if (options.ssl) {
    // A throw-away key and certificate, made as the server's user (umask
    // 077: both 0600, as PostgreSQL wants its key), gone with the directory.
    as_user.log_path = dir + "/openssl.log";
    const std::string key = dir + "/server.key", certificate = dir + "/server.crt";
    absl::Status s = internal::RunToEnd({kOpenssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                                         "-out", certificate, "-days", "2", "-subj", "/CN=backendlab"},
                                        as_user);
    if (absl::IsCancelled(s)) return s;
    if (!s.ok()) {
      return absl::InternalError(absl::StrCat("making the server's throw-away certificate failed (", s.message(),
                                              "); openssl said:", internal::FileTail(as_user.log_path, 5)));
    }
    for (auto [name, value] : {std::pair{"ssl", std::string("on")}, std::pair{"ssl_cert_file", certificate},
                               std::pair{"ssl_key_file", key}}) {
      server->settings_.emplace_back(name, value);
    }
  }
  return server;
}

absl::Status Server::StartPostmaster() {
  absl::Status started;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    started = Launch();
    if (started.ok() || !absl::IsUnavailable(started)) break;
  }
  if (!started.ok()) return started;
  if (options_.tcp) {
    // Password authentication on TCP, with a password of this server only (a
    // copied data directory has its template's).
    PGconn* conn = PQconnectdb(conninfo_.c_str());
    std::string error;
    if (PQstatus(conn) != CONNECTION_OK) {
      error = PQerrorMessage(conn);
    } else {
      PGresult* r = PQexec(conn, absl::StrCat("ALTER ROLE postgres PASSWORD '", password_, "'").c_str());
      if (PQresultStatus(r) != PGRES_COMMAND_OK) error = PQresultErrorMessage(r);
      PQclear(r);
    }
    PQfinish(conn);
    if (!error.empty()) return absl::InternalError(absl::StrCat("setting the TCP password failed: ", error));
    tcp_conninfo_ =
        absl::StrCat("host=127.0.0.1 port=", port_, " user=postgres dbname=postgres gssencmode=disable password=", password_);
  }
  return absl::OkStatus();
}

std::string Server::conninfo(Transport transport) const {
  if (transport == Transport::kUnix || tcp_conninfo_.empty()) return conninfo_;
  const bool ssl = transport == Transport::kSsl && options_.ssl;
  // require: encrypted, the certificate not checked (it is the server's own
  // throw-away one), as a client that trusts its network does.
  return absl::StrCat(tcp_conninfo_, ssl ? " sslmode=require" : " sslmode=disable");
}

absl::StatusOr<int64_t> Server::RuntimeComputed(const std::string& name) {
  std::vector<std::string> argv = {options_.installation.bindir + "/postgres", "-D", data_directory(), "-C", name};
  for (const auto& [setting, value] : settings_) {
    argv.push_back("-c");
    argv.push_back(setting + "=" + value);
  }
  internal::SpawnOptions spawn;
  spawn.user = user_;
  spawn.log_path = absl::StrCat(dir_, "/", name, ".log");
  spawn.pdeath_signal = SIGKILL;
  absl::Status s = internal::RunToEnd(argv, spawn);
  const std::string tail = internal::FileTail(spawn.log_path, 5);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("postgres -C ", name, ": ", s.message(), tail));
  std::ifstream in(spawn.log_path);
  int64_t value = 0;
  if (!(in >> value)) return absl::InternalError(absl::StrCat("postgres -C ", name, " said:", tail));
  unlink(spawn.log_path.c_str());
  return value;
}

absl::StatusOr<int64_t> Server::HugePagesNeeded() {
  absl::StatusOr<int64_t> pages = RuntimeComputed("shared_memory_size_in_huge_pages");
  if (!pages.ok()) return pages.status();
  if (*pages <= 0) {
    return absl::FailedPreconditionError(
        "`what_if`=huge-pages: the server says it cannot use huge pages here (shared_memory_size_in_huge_pages is -1)");
  }
  return *pages;
}

absl::StatusOr<int64_t> Server::SharedMemoryBytes() {
  if (options_.installation.major < 15) return 0;
  absl::StatusOr<int64_t> mb = RuntimeComputed("shared_memory_size");  // in MB
  if (!mb.ok()) return mb.status();
  return *mb << 20;
}

absl::Status Server::Launch() {
  const ServerOptions& options = options_;

  absl::StatusOr<int> port = FreePort();
  if (!port.ok()) return port.status();
  port_ = *port;
  std::vector<std::string> argv = {options.installation.bindir + "/postgres", "-D", data_directory(),
                                   "-c", absl::StrCat("port=", port_),
                                   "-c", absl::StrCat("listen_addresses=", options.tcp ? "127.0.0.1" : ""),
                                   "-c", "unix_socket_directories=" + dir_,
                                   "-c", "unix_socket_permissions=0700"};
  for (const auto& [name, value] : settings_) {
    argv.push_back("-c");
    argv.push_back(name + "=" + value);
  }
  const std::string log = dir_ + "/server.log";
  // Should the tool die without stopping it (SIGKILL), the postmaster gets
  // SIGINT: a fast shutdown that removes its shared memory and socket.
  internal::SpawnOptions spawn;
  spawn.user = user_;
  spawn.log_path = log;
  spawn.pdeath_signal = SIGINT;
  const char* inherited = getenv("LD_PRELOAD");
  std::string preload = inherited != nullptr ? inherited : "";
  if (!options.preload.empty()) {
    if (preload_copy_.empty()) {
      // Named after the library, with what LD_PRELOAD cannot carry (and
      // anything else odd) as '_': CheckPreloadRoom keeps the directory clean.
      const size_t slash = options.preload.rfind('/');
      std::string name = absl::StrCat("what-if-", options.preload.substr(slash == std::string::npos ? 0 : slash + 1));
      for (char& c : name) {
        if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+') c = '_';
      }
      absl::StatusOr<std::string> copy = CopyIntoDirectory(options.preload, name, absl::StrCat("`what_if`=", options.what_if));
      if (!copy.ok()) return copy.status();
      preload_copy_ = *copy;
    }
    preload = preload.empty() ? preload_copy_ : absl::StrCat(preload_copy_, ":", preload);
  }
  if (options.builtin_sampler_hz > 0) {
    if (absl::Status s = PrepareSampler(preload, spawn); !s.ok()) return s;
  } else if (!preload.empty()) {
    spawn.environment.push_back("LD_PRELOAD=" + preload);
  }
  // The start's environment size: moves where the postmaster's stack, and
  // every backend's it forks, begins.
  if (layout_.env_bytes > 0) {
    spawn.environment.push_back(absl::StrCat(kStartPadVariable, "=", std::string(static_cast<size_t>(layout_.env_bytes), 'x')));
  }
  absl::StatusOr<pid_t> pid = internal::Spawn(argv, spawn);
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  // Should the tool be killed, the postmaster gets SIGINT (above) and the
  // directory is removed once it has shut down.
  if (!keep_) {
    if (absl::Status s = WatchDirectory(dir_, pid_); !s.ok()) {
      (void)Stop();
      return s;
    }
  }
  conninfo_ = absl::StrCat("host=", internal::ConninfoValue(dir_), " port=", port_, " user=postgres dbname=postgres");

  const int64_t deadline = NowNs() + kStartTimeoutNs;
  for (;;) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      const std::string tail = internal::FileTail(log, 15);
      if (text.str().find("Address already in use") != std::string::npos) {
        unlink(log.c_str());
        return absl::UnavailableError(absl::StrCat("port ", port_, " in use:", tail));
      }
      return absl::InternalError(absl::StrCat("the server did not start (", internal::DescribeWaitStatus(status),
                                              "); its log ends:", tail));
    }
    if (PQping(conninfo_.c_str()) == PQPING_OK) break;
    if (StopRequested()) {
      (void)Stop();
      return StoppedStatus();
    }
    if (NowNs() > deadline) {
      const std::string tail = LogTail();
      (void)Stop();
      return absl::InternalError(absl::StrCat("the server did not accept connections within 60 s; its log ends:", tail));
    }
    usleep(20'000);
  }
  // The library's constructor ran before the postmaster's main(): by now it
  // has started sampling, or said in the log why not.
  if (sample_file_ && sample_file_->sampler_pid() != pid_) {
    const std::string tail = LogTail();
    (void)Stop();
    return absl::InternalError(
        absl::StrCat("the built-in sampler did not start in the server (`profile`=builtin); its log ends:", tail));
  }
  if (absl::Status s = CheckPreloaded(); !s.ok()) {
    (void)Stop();
    return s;
  }
  // postmaster.pid's line 7: "key shmid" of the System V segment.
  std::ifstream pidfile(data_directory() + "/postmaster.pid");
  std::string line;
  for (int i = 0; i < 7 && std::getline(pidfile, line); ++i) {
  }
  long key = 0;
  int id = -1;
  if (std::sscanf(line.c_str(), "%ld %d", &key, &id) == 2) shm_id_ = id;
  return absl::OkStatus();
}

absl::StatusOr<std::string> Server::CopyIntoDirectory(const std::string& source, const std::string& name,
                                                      const std::string& what) {
  std::ifstream in(source, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in || bytes.str().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": cannot read ", source));
  }
  const std::string copy = absl::StrCat(dir_, "/", name);
  if (absl::Status s = internal::WriteNewFile(copy, bytes.str(), user_); !s.ok()) return s;
  return copy;
}

absl::Status Server::CheckPreloaded() {
  if (preload_copy_.empty()) return absl::OkStatus();
  std::ifstream maps(absl::StrCat("/proc/", pid_, "/maps"));
  std::string line;
  bool mapped = false;
  while (!mapped && std::getline(maps, line)) mapped = line.find(preload_copy_) != std::string::npos;
  const std::string what = absl::StrCat("`what_if`=", options_.what_if);
  if (!mapped) {
    return absl::InternalError(absl::StrCat(what, ": the library ", options_.preload,
                                            " is not loaded in the postmaster; its log ends:", LogTail()));
  }
  if (options_.preload_applied_line.empty()) return absl::OkStatus();
  std::ifstream log(dir_ + "/server.log");
  bool applied = false;
  while (!applied && std::getline(log, line)) applied = line.find(options_.preload_applied_line) != std::string::npos;
  if (!applied) {
    return absl::InternalError(
        absl::StrCat(what, ": the server's log does not say '", options_.preload_applied_line, "'; it ends:", LogTail()));
  }
  return absl::OkStatus();
}

absl::Status Server::PrepareSampler(const std::string& preload, internal::SpawnOptions& spawn) {
  if (sampler_library_.empty()) {
    // A copy the server's user owns, in its private directory: the build
    // tree may be closed to that user, and the copy goes with the directory.
    absl::StatusOr<std::string> copy = CopyIntoDirectory(profiling::SamplerLibraryPath(), "libbackendlab_sampler.so",
                                                         "`profile`=builtin (build the backendlab target)");
    if (!copy.ok()) return copy.status();
    sampler_library_ = *copy;
  }
  // A new file for every start: a postmaster that failed to start may have
  // written into the last one.
  const std::string path = dir_ + "/samples";
  sample_file_.reset();
  unlink(path.c_str());
  std::optional<profiling::SampleFile::Owner> owner;
  if (user_) owner = profiling::SampleFile::Owner{user_->uid, user_->gid};
  absl::StatusOr<profiling::SampleFile> file =
      profiling::SampleFile::Create(path, kBuiltinSampleCapacity, options_.builtin_sampler_hz, owner);
  if (!file.ok()) return file.status();
  sample_file_.emplace(std::move(*file));
  spawn.environment = sample_file_->Environment(sampler_library_, preload);
  spawn.pid_variable = profiling::SampleFile::PidVariable();
  return absl::OkStatus();
}

Server::~Server() { (void)Stop(); }

std::string Server::LogTail(int lines) const { return internal::FileTail(dir_ + "/server.log", lines); }

absl::Status Server::CheckRunning(int64_t grace_ns) {
  if (pid_ < 0) return absl::InternalError("the server is not running");
  int status;
  if (!internal::ReapedWithin(pid_, grace_ns, &status)) return absl::OkStatus();
  pid_ = -1;
  // Killed, it could not remove its System V segment; its children leave on
  // their own when they see it gone, and the segment goes with the last.
  if (WIFSIGNALED(status) && shm_id_ >= 0) shmctl(shm_id_, IPC_RMID, nullptr);
  return absl::InternalError(absl::StrCat("the server died during the run (", internal::DescribeWaitStatus(status),
                                          "); its log ends:", LogTail()));
}

absl::Status Server::Stop() {
  absl::Status result;
  if (pid_ > 0) {
    const std::vector<pid_t> children = ChildrenOf(pid_);
    int status = 0;
    kill(pid_, SIGINT);
    bool ended = internal::WaitForExit(pid_, kFastStopTimeoutNs, &status);
    if (!ended) {
      kill(pid_, SIGQUIT);
      ended = internal::WaitForExit(pid_, kQuitTimeoutNs, &status);
    }
    if (!ended) {
      kill(pid_, SIGKILL);
      for (pid_t child : children) kill(child, SIGKILL);
      internal::WaitForExit(pid_, kQuitTimeoutNs, &status);
      if (shm_id_ >= 0) shmctl(shm_id_, IPC_RMID, nullptr);
      result = absl::InternalError(absl::StrCat("the server did not stop (SIGINT, then SIGQUIT) and was killed; "
                                                "its log ends:", LogTail()));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      // It died before the stop (killed): its System V segment is left.
      if (WIFSIGNALED(status) && shm_id_ >= 0) shmctl(shm_id_, IPC_RMID, nullptr);
      result = absl::InternalError(absl::StrCat("the server's shutdown failed (", internal::DescribeWaitStatus(status),
                                                "); its log ends:", LogTail()));
    }
    pid_ = -1;
  }
  if (!dir_.empty()) {
    if (keep_) {
      kept_ = dir_;
    } else if (absl::Status s = internal::RemoveTree(dir_); !s.ok() && result.ok()) {
      result = s;
    }
    UnwatchDirectory(dir_);
    dir_.clear();
  }
  return result;
}

}  // namespace backendlab::pgreal
