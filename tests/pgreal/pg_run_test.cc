// RunPg against Debian's PostgreSQL 15: what the server's per-connection
// figures divide by, and its system calls counted by kind.
#include "pgreal/pg_run.h"

#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "base/start_layout.h"
#include "pgreal/installation.h"
#include "pgreal/server.h"
#include "pgreal/internal/processes.h"
#include "profiling/perf_events.h"
#include "tests/test_util/skip.h"

namespace backendlab::pgreal {
namespace {

// Debian's 15, runnable here, on a kernel that counts system calls.
class PgRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Installation> installation = DefaultInstallation();
    if (!installation.ok()) BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << installation.status().message();
    if (geteuid() == 0 && getpwnam("postgres") == nullptr) {
      BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << "running as root and there is no user postgres to run the server as";
    }
    if (absl::Status s = profiling::PerfEventAvailability(profiling::PerfEvent::kSyscalls); !s.ok()) {
      BACKENDLAB_SKIP(test_util::SyscallCountsNeed()) << s.message();
    }
    installation_ = *installation;
  }
  Installation installation_;
};

TEST_F(PgRunTest, TheServerIsCountedOverEveryConnectionItServedAndItsCallsByKind) {
  for (const char* name : {"clone", "openat"}) {
    if (!profiling::HasSyscallTracepoint(name)) {
      BACKENDLAB_SKIP(test_util::kNeedsTracefs) << "no syscalls:sys_enter_" << name << " tracepoint in this kernel";
    }
  }
  constexpr int64_t kConnections = 12, kWarmup = 3, kRounds = 2;
  PgRunOptions options;
  options.installations = {installation_};
  options.shared_buffers = {int64_t{128} << 20};
  options.loop.connections = kConnections;
  options.loop.warmup = kWarmup;
  options.rounds = kRounds;
  options.server_syscall_kinds = {"clone", "openat"};
  absl::StatusOr<PgResult> result = RunPg(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->targets.size(), 1u);
  const PgTargetResult& t = result->targets[0];
  EXPECT_EQ(t.loop.connections, kRounds * kConnections);
  ASSERT_EQ(t.server_rounds.size(), static_cast<size_t>(kRounds)) << "one usage per round";
  ASSERT_EQ(t.server_syscall_kinds, options.server_syscall_kinds);
  for (const ServerUsage& u : t.server_rounds) {
    EXPECT_EQ(u.connections, kConnections + kWarmup) << "the warm-ups were served and counted too";
    ASSERT_EQ(u.syscalls_by_kind.size(), 2u) << t.server_syscalls_unavailable;
    // The postmaster forks one backend per connection (fork() is clone on
    // Linux) and nothing else with autovacuum off, the auxiliary processes
    // already running.
    EXPECT_EQ(u.syscalls_by_kind[0], u.connections) << "one clone per connection";
    EXPECT_GT(u.syscalls_by_kind[1], u.connections) << "each backend opens files";
    EXPECT_GT(u.syscalls, u.syscalls_by_kind[0] + u.syscalls_by_kind[1]);
  }
  EXPECT_EQ(Merged(t.server_rounds).connections, kRounds * (kConnections + kWarmup));
}

TEST_F(PgRunTest, ASystemCallWithNoTracepointIsRefused) {
  PgRunOptions options;
  options.installations = {installation_};
  options.shared_buffers = {int64_t{128} << 20};
  options.loop.connections = 2;
  options.rounds = 1;
  options.server_syscall_kinds = {"no_such_call"};
  absl::StatusOr<PgResult> result = RunPg(options);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_NE(result.status().message().find("no_such_call"), std::string::npos) << result.status();
}

// A failed connection looks again for a death under way (a killed server
// or pooler closes its sockets before it can be reaped): the grace finds a
// child that ends within it, and no grace finds only one already ended.
// A randomised start: the postmaster's environment carries an unused
// variable of the drawn size, and its directory's name the drawn
// characters (the kernel draws its addresses at exec).
TEST(ServerStartTest, ARandomisedStartPadsTheEnvironmentAndTheDirectoryName) {
  absl::StatusOr<Installation> installation = DefaultInstallation();
  if (!installation.ok()) BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << installation.status().message();
  if (geteuid() == 0 && getpwnam("postgres") == nullptr) {
    BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << "running as root and there is no user postgres to run the server as";
  }
  uint64_t seed = 0;
  while (DrawStartLayout(seed).env_bytes == 0 || DrawStartLayout(seed).name_chars == 0) ++seed;
  const StartLayout layout = DrawStartLayout(seed);
  ServerOptions options;
  options.installation = *installation;
  options.start_seed = seed;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  std::ifstream in("/proc/" + std::to_string((*server)->postmaster_pid()) + "/environ");
  std::string entry, pad;
  while (std::getline(in, entry, '\0')) {
    if (entry.rfind("BACKENDLAB_START_PAD=", 0) == 0) pad = entry.substr(std::strlen("BACKENDLAB_START_PAD="));
  }
  EXPECT_EQ(static_cast<int64_t>(pad.size()), layout.env_bytes);
  const std::string name = std::filesystem::path((*server)->directory()).filename();
  EXPECT_EQ(name.rfind("backendlab-pg" + std::string(static_cast<size_t>(layout.name_chars), '_') + ".", 0), 0u)
      << name << " for " << layout.name_chars << " characters";
  EXPECT_TRUE((*server)->Stop().ok());
}

TEST(ReapedWithinTest, FindsAChildThatEndsWithinTheGrace) {
  const pid_t child = fork();
  if (child == 0) {
    usleep(200'000);
    _exit(7);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  EXPECT_FALSE(internal::ReapedWithin(child, 0, &status)) << "still running";
  ASSERT_TRUE(internal::ReapedWithin(child, 10'000'000'000, &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7);
  EXPECT_FALSE(internal::ReapedWithin(child, 0, &status)) << "reaped already: no child";
}

}  // namespace
}  // namespace backendlab::pgreal
