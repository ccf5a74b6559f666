// One measurement model: the mock postmaster and a real PostgreSQL give the
// same per-round record of a measured server (base/server_usage.h), held to
// the same checks by one test over both.
#include "base/server_usage.h"

#include <pwd.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "buffers/shared_buffers.h"
#include "gtest/gtest.h"
#include "lifecycle/cycle.h"
#include "pgreal/installation.h"
#include "pgreal/pg_run.h"
#include "tests/test_util/skip.h"

namespace backendlab {
namespace {

constexpr int64_t kConnections = 12, kWarmup = 3, kRounds = 2;

std::vector<ServerUsage> MockRounds() {
  std::vector<ServerUsage> rounds;
  for (int64_t r = 0; r < kRounds; ++r) {
    lifecycle::CycleOptions o;
    o.connections = kConnections;
    o.warmup = kWarmup;
    o.baseline_forks = 20;  // left out of the server's figures
    o.backend.shared_buffers = *buffers::ParseSharedBuffers("128MB");
    absl::StatusOr<lifecycle::CycleResult> result = lifecycle::RunCycle(o);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return {};
    rounds.push_back(result->server);
  }
  return rounds;
}

std::vector<ServerUsage> RealRounds() {
  absl::StatusOr<pgreal::Installation> installation = pgreal::DefaultInstallation();
  if (!installation.ok()) {
    ADD_FAILURE() << installation.status();
    return {};
  }
  pgreal::PgRunOptions options;
  options.installations = {*installation};
  options.shared_buffers = {int64_t{128} << 20};
  options.loop.connections = kConnections;
  options.loop.warmup = kWarmup;
  options.rounds = kRounds;
  absl::StatusOr<pgreal::PgResult> result = pgreal::RunPg(options);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok() || result->targets.size() != 1) return {};
  return result->targets[0].server_rounds;
}

class ServerUsageTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() != "real") return;
    absl::StatusOr<pgreal::Installation> installation = pgreal::DefaultInstallation();
    if (!installation.ok()) BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << installation.status().message();
    if (geteuid() == 0 && getpwnam("postgres") == nullptr) {
      BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << "running as root and there is no user postgres to run the server as";
    }
  }
};

TEST_P(ServerUsageTest, EveryRoundIsTheSameRecordOfTheWholeServer) {
  const std::vector<ServerUsage> rounds = GetParam() == "mock" ? MockRounds() : RealRounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(kRounds));
  for (const ServerUsage& u : rounds) {
    EXPECT_EQ(u.connections, kConnections + kWarmup) << "every connection served while counted, warm-up too";
    EXPECT_GT(u.cpu_ns, 0);
    ASSERT_GE(u.user_ns, 0) << "the user/system split is known for both";
    ASSERT_GE(u.system_ns, 0);
    EXPECT_EQ(u.user_ns + u.system_ns, u.cpu_ns) << "CPU is the kernel's own accounting on both sides";
    // A forked backend writes to its stack at once: at least one
    // copy-on-write fault each, whatever the machine.
    EXPECT_GE(u.minor_faults, u.connections);
    // Each backend sleeps at least once, waiting for its client.
    if (u.context_switches >= 0) {
      EXPECT_GE(u.context_switches, u.connections);
    }
  }
  for (const ServerUsage& u : rounds) {
    if (GetParam() == "mock") {
      EXPECT_GE(u.context_switches, 0) << "getrusage counts them";
    } else if (u.task_clock_ns >= 0) {
      EXPECT_GT(u.task_clock_ns, 0) << "perf's clock of the same processes";
    }
  }
  // Merging and per connection, computed in one place.
  const ServerUsage total = Merged(rounds);
  EXPECT_EQ(total.connections, kRounds * (kConnections + kWarmup));
  EXPECT_EQ(total.cpu_ns, rounds[0].cpu_ns + rounds[1].cpu_ns);
  EXPECT_DOUBLE_EQ(PerConnectionOf(total).cpu_us, static_cast<double>(total.cpu_ns) / 1e3 / static_cast<double>(total.connections));
  const std::vector<double> per_round = PerRound(rounds, [](const PerConnection& p) { return p.minor_faults; });
  ASSERT_EQ(per_round.size(), rounds.size());
  EXPECT_DOUBLE_EQ(per_round[1], static_cast<double>(rounds[1].minor_faults) / static_cast<double>(rounds[1].connections));
}

INSTANTIATE_TEST_SUITE_P(MockAndReal, ServerUsageTest, ::testing::Values("mock", "real"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// A figure one round did not count is not counted in the sum.
TEST(ServerUsageMergeTest, AFigureMissingFromOneRoundIsMissingFromTheSum) {
  ServerUsage a{.connections = 10, .cpu_ns = 1000, .user_ns = 600, .system_ns = 400, .minor_faults = 50,
                .major_faults = 0, .context_switches = 20, .syscalls = 300, .syscalls_by_kind = {10, 20}};
  ServerUsage b = a;
  b.context_switches = -1;
  b.syscalls = -1;
  b.syscalls_by_kind.clear();
  const ServerUsage total = Merged(std::vector<ServerUsage>{a, a});
  EXPECT_EQ(total.syscalls_by_kind, (std::vector<int64_t>{20, 40}));
  EXPECT_EQ(total.context_switches, 40);
  const ServerUsage partial = Merged(std::vector<ServerUsage>{a, b});
  EXPECT_EQ(partial.connections, 20);
  EXPECT_EQ(partial.context_switches, -1);
  EXPECT_EQ(partial.syscalls, -1);
  EXPECT_TRUE(partial.syscalls_by_kind.empty());
  EXPECT_DOUBLE_EQ(PerConnectionOf(partial).context_switches, -1);
  EXPECT_DOUBLE_EQ(PerConnectionOf(partial).user_us, 1200.0 / 1e3 / 20);
}

}  // namespace
}  // namespace backendlab
