// `backendlab pg` with many connections and production ones, against a real
// PostgreSQL: --hold rows (connections held beside the loop, the loop's
// figures without theirs), --tcp and --ssl rows (TLS and SCRAM really
// negotiated, the throw-away key private), the host's limits checked before
// anything starts, ^C and a held connection closed by the server mid-run,
// with nothing of a server left behind.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util/run_program.h"
#include "tests/tools/pg_cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::ReadFile;
using test_util::RunResult;

class PgManyTest : public PgCliTest {
 protected:
  static nlohmann::json Rows(const std::string& path) { return nlohmann::json::parse(ReadFile(path))["rows"]; }
};

TEST_F(PgManyTest, HeldConnectionsAreOpenedBesideTheLoopAndOnlyTheLoopIsCounted) {
  const RunResult r = Run(Small({"pg", "--hold=0,12", "--rounds=2", "--json=" + dir_ + "/out.json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("connections held beside the loop (--hold)"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir_ + "/out.json"));
  const nlohmann::json& rows = j["rows"];
  ASSERT_EQ(rows.size(), 2u);
  const nlohmann::json &none = rows[0], &held = rows[1];
  EXPECT_EQ(none["hold"], 0);
  EXPECT_EQ(held["hold"], 12);
  EXPECT_NE(held["server"].get<std::string>().find("hold 12"), std::string::npos) << held["server"];
  EXPECT_TRUE(none["hold_open_ms"].is_null());
  ASSERT_EQ(held["rounds_hold_open_ms"].size(), 2u) << "the opening timed in every round";
  EXPECT_GT(held["hold_open_ms"].get<double>(), 0);
  EXPECT_NEAR(held["hold_open_ms_per_connection"].get<double>(), held["hold_open_ms"].get<double>() / 12, 1e-9);
  // Each held backend's memory: a few hundred kB of its own at least, page
  // tables, and its share of the shared pages.
  EXPECT_GT(held["held_private_kb"].get<int64_t>(), 100);
  EXPECT_GT(held["held_page_tables_kb"].get<int64_t>(), 0);
  EXPECT_GE(held["held_pss_kb"].get<int64_t>(), held["held_private_kb"].get<int64_t>());
  EXPECT_GT(held["held_rss_kb"].get<int64_t>(), held["held_pss_kb"].get<int64_t>());
  for (const nlohmann::json& row : rows) {
    EXPECT_EQ(row["connections"], 40) << "20 measured connections in each of 2 rounds";
    EXPECT_GT(row["postmaster_cpu_us"].get<double>(), 0);
    EXPECT_LT(row["postmaster_cpu_us"].get<double>(), row["server_cpu_us"].get<double>());
    EXPECT_NEAR(row["ceiling_connections_per_second"].get<double>() * row["postmaster_cpu_us"].get<double>(), 1e6,
                0.25e6)
        << "the ceiling is one CPU-second over the postmaster's CPU per connection (medians of each)";
  }
  // 12 held backends beside 22 connections a round: were their start-ups
  // counted, each connection would carry half a backend's faults more
  // (~700 on Debian's 15).
  EXPECT_LT(held["server_minor_faults"].get<double>(), 1.3 * none["server_minor_faults"].get<double>());
  // The held row is compared with the row holding none, paired in the rounds.
  const double expected = std::sqrt(held["rounds_server_cpu_us"][0].get<double>() / none["rounds_server_cpu_us"][0].get<double>() *
                                    held["rounds_server_cpu_us"][1].get<double>() / none["rounds_server_cpu_us"][1].get<double>());
  EXPECT_NEAR(held["server_cpu_us_vs_baseline"].get<double>(), expected, 1e-9 * expected);
  EXPECT_EQ(j["header"]["settings"]["max_connections"], "18") << "the most held + clients + 5";
  EXPECT_EQ(j["header"]["hold"], nlohmann::json({0, 12}));
  ExpectNoServerLeft();
}

// Three rows per server: its Unix socket (trust), TCP (scram-sha-256) and
// TCP with TLS; the server's own log says which connections were encrypted
// and how each authenticated.
TEST_F(PgManyTest, TcpAndSslRowsStandBesideTheUnixSocketsAndTheServerSaysSo) {
  const RunResult r = Run(Small({"pg", "--tcp=on", "--ssl=on", "--set=log_connections=on", "--keep=on",
                                 "--connections=10", "--json=" + dir_ + "/out.json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rows = Rows(dir_ + "/out.json");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["transport"], "unix");
  EXPECT_EQ(rows[1]["transport"], "tcp");
  EXPECT_EQ(rows[2]["transport"], "tcp+ssl");
  EXPECT_EQ(rows[2]["server"], "15/128MB tcp+ssl");
  EXPECT_EQ(rows[1]["server_cpu_us_vs_baseline"].is_number(), true) << "over the Unix socket's row";
  const std::string kept = rows[0]["kept_directory"].get<std::string>();
  ASSERT_FALSE(kept.empty());
  const std::string log = ReadFile(kept + "/server.log");
  auto count = [&](const std::string& text) {
    size_t n = 0;
    for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
    return n;
  };
  // 10 measured and 2 warm-up connections a row.
  EXPECT_EQ(count("SSL enabled"), 12u) << log.substr(0, 4000);
  EXPECT_EQ(count("method=scram-sha-256"), 24u) << "both TCP rows exchange the password";
  struct stat key;
  ASSERT_EQ(stat((kept + "/server.key").c_str(), &key), 0);
  EXPECT_EQ(key.st_mode & 0777, 0600u) << "the throw-away key is the server user's alone";
  if (geteuid() == 0) {
    EXPECT_NE(key.st_uid, 0u) << "owned by the server's user, not root";
  }
  std::filesystem::remove_all(kept);
  ExpectNoServerLeft();
}

TEST_F(PgManyTest, BadInputIsAUsageError) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"pg", "--ssl=on"},
           {"pg", "--hold=-1"},
           {"pg", "--hold=100001"},
           {"pg", "--hold=5,5"},
           {"pg", "--conninfo=host=/nowhere", "--ssl=on"},
       }) {
    const RunResult r = Run(Small(args));
    EXPECT_EQ(r.exit_code, 2) << args[1] << ": " << r.err;
    EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab pg: ")) << r.err;
  }
  EXPECT_NE(Run(Small({"pg", "--ssl=on"})).err.find("--tcp"), std::string::npos);
  ExpectNothingCreated();
}

// More held connections than the descriptors this process may open: said
// in one line naming the limit, before any server starts.
TEST_F(PgManyTest, HoldingMoreThanTheHostAllowsIsRefusedNamingTheLimit) {
  const RunResult r = test_util::RunProgram(
      {"/bin/bash", "-c", "ulimit -Sn 200 && ulimit -Hn 200 && exec \"$@\"", "bash", BACKENDLAB_CLI_PATH, "pg",
       "--hold=1000", "--shared-buffers=128MB", "--rounds=1"},
      dir_);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab pg: --hold=1000: needs ")) << r.err;
  EXPECT_NE(r.err.find("RLIMIT_NOFILE's hard limit is 200"), std::string::npos) << r.err;
  ExpectNothingCreated();
}

TEST_F(PgManyTest, InterruptWhileHundredsAreHeldLeavesNothing) {
  ExpectInterruptLeavesNothing(
      {BACKENDLAB_CLI_PATH, "pg", "--hold=300", "--duration=60s", "--rounds=1", "--shared-buffers=128MB"}, "",
      /*backends=*/300);
}

// The server ends one held connection (SIGTERM: what pg_terminate_backend
// sends) while the loop runs: the run says so and fails.
TEST_F(PgManyTest, AHeldConnectionTheServerClosesMidRunIsReported) {
  constexpr size_t kHeld = 20;
  test_util::SpawnedTool tool(
      {BACKENDLAB_CLI_PATH, "pg", "--hold=20", "--duration=5s", "--rounds=1", "--shared-buffers=128MB"}, dir_);
  const std::vector<pid_t> backends = WaitForServerWithBackends(tool, kHeld);
  ASSERT_GE(backends.size(), kHeld) << ReadFile(dir_ + "/stderr");
  // The oldest backend is a held one: they were all made before the loop's first.
  ASSERT_EQ(kill(backends.front(), SIGTERM), 0);
  const std::optional<int> code = tool.WaitFor(test_util::kPatience);
  ASSERT_TRUE(code.has_value());
  EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 1) << *code;
  const std::string err = ReadFile(dir_ + "/stderr");
  EXPECT_NE(err.find("1 of 20 held connections were closed by the server during the run"), std::string::npos) << err;
  ExpectNoServerLeft();
}

}  // namespace
}  // namespace backendlab::tools
