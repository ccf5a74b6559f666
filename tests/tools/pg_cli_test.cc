// `backendlab pg` against a real PostgreSQL (Debian's, installed by
// tools/install-deps): a run, its figures and outputs, bad input, and that
// nothing of a server outlives the tool — after a normal end, ^C, or a
// server killed mid-run.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "profiling/internal/sample_file_header.h"
#include "profiling/perf_record.h"
#include "tests/lifecycle/child_processes.h"
#include "tests/test_util/run_program.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/pg_cli_fixture.h"
#include "tests/tools/spawned_tool.h"

namespace backendlab::tools {
namespace {

TEST_F(PgCliTest, RunsARealServerAndReportsItsCostsPerConnection) {
  const test_util::RunResult r = Run(Small({"pg", "--shared-buffers=128MB,256MB", "--rounds=2", "--clients=2",
                                            "--query=SELECT 1", "--json=" + dir_ + "/out.json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("15/128MB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("15/256MB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fsync=off"), std::string::npos) << "the report says what the server ran with";
  const nlohmann::json j = nlohmann::json::parse(test_util::ReadFile(dir_ + "/out.json"));
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const nlohmann::json& row : j["rows"]) {
    EXPECT_EQ(row["connections"], 40) << "20 measured connections in each of 2 rounds";
    EXPECT_GT(row["connections_per_second"].get<double>(), 0);
    // Every backend faults in hundreds of pages (its heap, its catalog
    // caches, the postmaster's pages it writes to after fork: ~700 on
    // Debian's 15), the postmaster a few dozen per fork of its own: the
    // kernel's accounting of reaped children must have seen the backends,
    // and the inherited perf counters too.
    EXPECT_GE(row["server_minor_faults"].get<double>(), 100);
    EXPECT_GT(row["server_cpu_us"].get<double>(), 0);
    EXPECT_GT(row["server_task_clock_us"].get<double>(), 0);
    EXPECT_GT(row["server_user_us"].get<double>() + row["server_system_us"].get<double>(), 0);
    ASSERT_EQ(row["rounds_server_cpu_us"].size(), 2u) << "one figure per round";
    ASSERT_EQ(row["rounds_connections_per_second"].size(), 2u);
  }
  // The first server is the baseline: its own ratios are a plain 1. The
  // second's are paired within the two rounds: the geometric mean of the
  // rounds' quotients, inside its interval, with a verdict.
  const nlohmann::json& base = j["rows"][0];
  const nlohmann::json& other = j["rows"][1];
  EXPECT_EQ(base["server_cpu_us_vs_baseline"].get<double>(), 1.0);
  EXPECT_TRUE(base["server_cpu_us_vs_baseline_verdict"].is_null()) << base.dump();
  for (const char* key : {"server_cpu_us", "connections_per_second"}) {
    const std::string ratio = std::string(key) + "_vs_baseline";
    const std::string rounds = std::string("rounds_") + key;
    const double expected = std::sqrt(other[rounds][0].get<double>() / base[rounds][0].get<double>() *
                                      other[rounds][1].get<double>() / base[rounds][1].get<double>());
    EXPECT_NEAR(other[ratio].get<double>(), expected, 1e-9 * expected) << ratio;
    ASSERT_EQ(other[ratio + "_ci"].size(), 2u) << other.dump();
    EXPECT_LE(other[ratio + "_ci"][0].get<double>(), other[ratio].get<double>());
    EXPECT_GE(other[ratio + "_ci"][1].get<double>(), other[ratio].get<double>());
    const std::string verdict = other[ratio + "_verdict"].get<std::string>();
    EXPECT_TRUE(verdict == "faster" || verdict == "slower" || verdict == "same" || verdict == "~") << verdict;
  }
  EXPECT_EQ(j["header"]["settings"]["max_connections"], "7") << "clients + 5";
  // Two servers: two rounds are too few for a look (the first is at 6).
  EXPECT_EQ(j["header"].value("rounds_ended_by", ""), "rounds") << j["header"].dump();
  EXPECT_NE(r.out.find("rounds: --rounds ended the rounds after 2\n"), std::string::npos) << r.out;
  ExpectNoServerLeft();
}

// At every shared_buffers and clients entry: a row of the real server, paired
// with the mock's baseline at the same pair.
TEST_F(PgCliTest, CompareWithPgAddsARealServerPerSharedBuffersInTheSameRounds) {
  const std::string json_path = dir_ + "/compare.json", svg_path = dir_ + "/compare.svg";
  const test_util::RunResult r =
      Run({"compare", "--with-pg", "--layouts=hash", "--exit-checks=off", "--shared-buffers=128MB,256MB",
           "--clients=1,2", "--connections=6", "--rounds=2", "--warmup=1", "--work-lookups=10", "--json=" + json_path,
           "--svg=" + svg_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pg15: PostgreSQL 15"), std::string::npos) << "the report names the server" << r.out;
  const nlohmann::json j = nlohmann::json::parse(test_util::ReadFile(json_path));
  std::map<std::pair<int64_t, int64_t>, nlohmann::json> mock;  // by shared_buffers_bytes and clients
  auto key = [](const nlohmann::json& row) {
    return std::pair{row["shared_buffers_bytes"].get<int64_t>(), row["clients"].get<int64_t>()};
  };
  std::vector<nlohmann::json> pg;
  for (const nlohmann::json& row : j["rows"]) {
    if (row["config"] == "pg15") {
      pg.push_back(row);
    } else {
      mock[key(row)] = row;
    }
  }
  ASSERT_EQ(mock.size(), 4u) << j.dump(2);
  ASSERT_EQ(pg.size(), 4u) << "one real server per shared_buffers, a row per clients: " << j.dump(2);
  for (const nlohmann::json& row : pg) {
    SCOPED_TRACE(row.dump());
    ASSERT_GT(row["connections_per_second"].get<double>(), 0);
    // Paired with the mock's baseline round by round, as the mock's rows are.
    const nlohmann::json& base = mock.at(key(row));
    for (const auto& [ratio, rounds] : {std::pair{"connections_per_second_vs_baseline", "rounds_connections_per_second"},
                                        std::pair{"server_cpu_us_vs_baseline", "rounds_server_cpu_us"}}) {
      ASSERT_EQ(row[rounds].size(), 2u) << rounds;
      double logs = 0;
      for (size_t i = 0; i < 2; ++i) logs += std::log(row[rounds][i].get<double>() / base[rounds][i].get<double>());
      EXPECT_NEAR(row[ratio].get<double>(), std::exp(logs / 2), 1e-9 * row[ratio].get<double>()) << ratio;
      EXPECT_TRUE(row[std::string(ratio) + "_verdict"].is_string()) << ratio;
    }
    EXPECT_GT(row["server_cpu_us"].get<double>(), 0) << "the real server's CPU, per connection";
    EXPECT_TRUE(row["exit_check_us"].is_null()) << "a real backend's phases are not the mock's";
  }
  EXPECT_EQ(j["header"]["pg"]["settings"]["fsync"], "off");
  const std::string svg = test_util::ReadFile(svg_path);
  EXPECT_NE(svg.find(">pg15, 2 clients</text>"), std::string::npos) << "the chart has the real server's lines";
  EXPECT_EQ(j["header"]["pg"]["settings"]["max_connections"], "7") << "the most clients + 5";
  ExpectNoServerLeft();
}

// Defect 13 of the 2026-12-05 reliability review: with --hold=0,8 the
// mock had rows at both holds and the real server one at hold 0, and no line
// said it held none.
TEST_F(PgCliTest, CompareWithPgAndHoldSaysTheRealServerHoldsNone) {
  const std::string json_path = dir_ + "/compare.json";
  const test_util::RunResult r =
      Run({"compare", "--with-pg", "--hold=0,8", "--layouts=hash", "--exit-checks=off", "--shared-buffers=128MB",
           "--connections=6", "--rounds=2", "--warmup=1", "--work-lookups=10", "--json=" + json_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(test_util::ReadFile(json_path));
  std::vector<int64_t> mock_holds, pg_holds;
  for (const nlohmann::json& row : j["rows"]) {
    (row["config"] == "pg15" ? pg_holds : mock_holds).push_back(row["hold"].get<int64_t>());
  }
  EXPECT_EQ(mock_holds, (std::vector<int64_t>{0, 8})) << j.dump(2);
  EXPECT_EQ(pg_holds, (std::vector<int64_t>{0})) << "the real server's one row, at what it held: " << j.dump(2);
  EXPECT_NE(r.out.find("pg15 holds no connections"), std::string::npos) << r.out;
  ExpectNoServerLeft();
}

TEST_F(PgCliTest, CompareWithPgThroughAPoolerAddsThePooledRow) {
  if (!HavePgBouncer()) BACKENDLAB_SKIP(test_util::kNeedsPgBouncer) << "no pgbouncer (tools/install-deps installs it)";
  const test_util::RunResult via =
      Run({"compare", "--with-pg", "--via=pgbouncer", "--layouts=hash", "--exit-checks=off",
           "--shared-buffers=128MB", "--connections=4", "--rounds=1", "--warmup=1", "--work-lookups=10"});
  ASSERT_EQ(via.exit_code, 0) << via.err;
  EXPECT_NE(via.out.find("pg15 via pgbouncer:session"), std::string::npos) << "a pooled row: " << via.out;
  ExpectNoServerLeft();
}

TEST_F(PgCliTest, BadInputIsAUsageError) {
  const std::vector<std::vector<std::string>> bad = {
      {"pg", "--bindir=/nonexistent"},
      {"pg", "--run-as=no-such-user-here"},
      {"pg", "--set=port=5"},
      {"pg", "--set=novalue"},
      // What the rows are labelled and sized by: once accepted, and the row
      // kept its --shared-buffers label.
      {"pg", "--set=shared_buffers=1GB"},
      {"pg", "--set=Max_Connections=50"},
      {"pg", "--set=work_mem=1MB\nfsync=on"},
      {"pg", "--pg-versions=9"},
      {"pg", "--shared-buffers=1GB,1024MB"},
      {"pg", "--conninfo=host=/x", "--shared-buffers=1GB"},
      {"pg", "--postmaster-pid=1"},
      {"pg", "--connections=10", "--duration=1s"},
      {"pg", "--out=x"},
      {"pg", "--top=5"},
      {"pg", "--profile", "--conninfo=host=/x"},
      {"pg", "--profile", "--frequency=0"},
      {"pg", "--profile=bogus"},
      {"pg", "--profile=on,builtin"},
      {"pg", "--profile=perf,perf"},
      {"pg", "--profile=builtin", "--conninfo=host=/x", "--postmaster-pid=1"},
      {"pg", "--explain-phases", "--pg-versions=19"},
      {"pg", "--via=odyssey"},
      {"pg", "--via=pg\nbouncer"},  // escaped: one line
      {"pg", "--via=pgbouncer,pgbouncer:session"},
      {"pg", "--via=pgbouncer", "--pgbouncer=/nonexistent/pgbouncer"},
      {"pg", "--pgbouncer=/usr/sbin/pgbouncer"},
      {"pg", "--via=pgbouncer", "--conninfo=host=/x"},
      {"pg", "--via=pgbouncer", "--tcp"},
      {"pg", "--precision=101"},
      {"pg", "--precision=-1"},
      {"pg", "--same-within=50"},
      {"pg", "--same-within=0%"},
      {"pg", "--randomise=yes"},
      {"pg", "--scheduling=rr"},
      {"pg", "--require-decisive=1"},
      {"pg", "--max-time=0s"},
      {"pg", "--max-time=10"},
      {"pg", "--seed=-1"},
      {"pg", "--clients=1,1"},
      {"pg", "--clients=0"},
      {"pg", "--clients=1,"},
  };
  for (const std::vector<std::string>& args : bad) {
    const test_util::RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << ": " << r.err;
    EXPECT_EQ(test_util::Lines(r.err).size(), 1u) << r.err;
    ExpectNothingCreated();
  }
}

// --run-as: as root a user that does not exist; otherwise the flag itself,
// which only root can use. Either way one line, exit 2, nothing made.
TEST_F(PgCliTest, RunAsIsAUsageErrorWithItsReason) {
  const test_util::RunResult r = Run({"pg", "--run-as=no-such-user-here"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab pg: --run-as")) << r.err;
  EXPECT_NE(r.err.find(geteuid() == 0 ? "no user 'no-such-user-here'" : "needs root"), std::string::npos) << r.err;
  ExpectNothingCreated();
}

// The built-in sampler is loaded into a server the tool starts: with
// --conninfo the reason is that, not a missing --postmaster-pid.
TEST_F(PgCliTest, ProfileBuiltinOfAnExistingServerSaysWhyAtOnce) {
  const test_util::RunResult r = Run({"pg", "--profile=builtin", "--conninfo=host=/x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab pg: --profile=builtin loads the sampler library"))
      << r.err;
  ExpectNothingCreated();
}

// A TMPDIR whose server socket would not fit a Unix socket's path: said
// before anything is made, not by the server after an initdb.
TEST_F(PgCliTest, ATmpdirTooLongForTheSocketIsAUsageError) {
  const std::string deep = tmpdir_ + "/" + std::string(100, 'd');
  ASSERT_TRUE(std::filesystem::create_directory(deep));
  if (geteuid() == 0) {
    ASSERT_EQ(chmod(deep.c_str(), 0711), 0);
  }
  const test_util::ScopedEnv tmpdir("TMPDIR", deep);
  const test_util::RunResult r = Run(Small({"pg"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab pg: TMPDIR")) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(deep)) << "nothing made in it";
  std::filesystem::remove(deep);
  ExpectNothingCreated();
}

TEST_F(PgCliTest, ExplainPhasesPrintsTheRulesOfEachVersionWithoutAServer) {
  const test_util::RunResult r = Run({"pg", "--explain-phases", "--pg-versions=15,17"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("phase rules for PostgreSQL 15"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("phase rules for PostgreSQL 17"), std::string::npos) << r.out;
  // 15's accept is StreamConnection, 17's AcceptConnection.
  EXPECT_NE(r.out.find("StreamConnection"), std::string::npos);
  EXPECT_NE(r.out.find("AcceptConnection"), std::string::npos);
  ExpectNothingCreated();
}

// A profile of the JSON header, of a Small() run with a query: every server
// sample in one phase row, init seen, every backend forked counted.
void ExpectEveryServerSampleInOneRow(const nlohmann::json& profile) {
  int64_t sum = 0;
  for (const auto& [phase, samples] : profile["phases"].items()) sum += samples.get<int64_t>();
  EXPECT_EQ(sum, profile["server_samples"].get<int64_t>()) << "every server sample is in one row";
  EXPECT_GT(profile["phases"]["init"].get<int64_t>(), 0);
  EXPECT_GE(profile["backends_forked"].get<int64_t>(), 22) << "20 measured + 2 warm-up connections";
}

TEST_F(PgCliTest, ProfileClassifiesEveryServerSampleAndWritesFlameGraphs) {
  if (absl::Status s = profiling::SystemWideRecordingAvailable(); !s.ok()) BACKENDLAB_SKIP(test_util::PerfRecordNeed(s)) << s.message();
  const std::string out = dir_ + "/profile";
  const test_util::RunResult r =
      Run(Small({"pg", "--profile", "--query=SELECT 1", "--out=" + out, "--json=" + dir_ + "/out.json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("15/128MB under perf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unclaimed"), std::string::npos) << "the unclaimed share is always shown";
  EXPECT_NE(r.out.find("recording cost: "), std::string::npos) << "what recording cost";
  EXPECT_NE(r.out.find(" in one pair: not a measured cost\n"), std::string::npos) << "one pair of passes is no measured cost";
  const nlohmann::json j = nlohmann::json::parse(test_util::ReadFile(dir_ + "/out.json"));
  const nlohmann::json& p = j["header"]["profiles"]["15/128MB"];
  ASSERT_TRUE(p.is_object()) << j["header"].dump();
  ExpectEveryServerSampleInOneRow(p);
  EXPECT_EQ(access((out + "/15-128MB/all.svg").c_str(), R_OK), 0);
  EXPECT_EQ(access((out + "/15-128MB/phases.folded").c_str(), R_OK), 0);
  ExpectNoServerLeft();
}

TEST_F(PgCliTest, InterruptWhilePerfRecordsLeavesNoPerfAndNoServer) {
  if (absl::Status s = profiling::SystemWideRecordingAvailable(); !s.ok()) BACKENDLAB_SKIP(test_util::PerfRecordNeed(s)) << s.message();
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "pg", "--profile", "--duration=3s", "--rounds=1", "--warmup=0",
                               "--shared-buffers=128MB", "--out=" + dir_ + "/profile"},
                              dir_);
  const pid_t postmaster = WaitForProcessNamed("postgres", tool);
  ASSERT_NE(postmaster, 0) << "no server started";
  // perf record writes into a directory under the tool's TMPDIR: its command
  // line names it.
  ASSERT_NE(WaitForProcessNamed("perf", tool), 0) << "perf record never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(kill(tool.pid(), SIGINT), 0);
  const std::optional<int> code = tool.WaitFor(test_util::kPatience);
  ASSERT_TRUE(code.has_value());
  EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 130) << *code;
  ExpectNoServerLeft();  // no process mentions TMPDIR (perf's did), and TMPDIR is empty
  EXPECT_TRUE(SegmentsCreatedBy(postmaster).empty()) << "the server's System V segment was left";
}

// The built-in sampler needs no perf; with perf at hand the same pass is
// recorded by both and their rankings compared.
TEST_F(PgCliTest, ProfileBuiltinClassifiesEveryServerSampleAndComparesWithPerf) {
  const bool perf = profiling::SystemWideRecordingAvailable().ok();
  const std::string out = dir_ + "/profile";
  const test_util::RunResult r = Run(Small({"pg", perf ? "--profile=builtin,perf" : "--profile=builtin",
                                            "--query=SELECT 1", "--out=" + out, "--json=" + dir_ + "/out.json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("15/128MB under the built-in sampler"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recording cost: "), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(test_util::ReadFile(dir_ + "/out.json"));
  const nlohmann::json& b = j["header"]["builtin_profiles"]["15/128MB"];
  ASSERT_TRUE(b.is_object()) << j["header"].dump();
  EXPECT_EQ(b["profiler"], "builtin");
  ExpectEveryServerSampleInOneRow(b);
  EXPECT_EQ(access((out + "/15-128MB-builtin/all.svg").c_str(), R_OK), 0);
  EXPECT_EQ(access((out + "/15-128MB-builtin/phases.folded").c_str(), R_OK), 0);
  if (perf) {
    EXPECT_NE(r.out.find("15/128MB under perf"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("one pass recorded by both profilers"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("agreement: "), std::string::npos) << r.out;
    EXPECT_EQ(j["header"]["profiles"]["15/128MB"]["profiler"], "perf");
    const nlohmann::json& a = j["header"]["profile_agreement"]["15/128MB"];
    ASSERT_TRUE(a.is_object()) << j["header"].dump();
    // The counts are those of the two rankings reported (names compared
    // without leading underscores, libc's aliases), and two profilers of one
    // pass of hundreds of samples share more than nothing.
    auto bare = [](std::string name) { return name.erase(0, name.find_first_not_of('_')); };
    int common_5 = 0, common_10 = 0;
    const nlohmann::json& builtin_top = a["builtin_top_10"];
    const nlohmann::json& perf_top = a["perf_top_10"];
    for (size_t i = 0; i < builtin_top.size(); ++i) {
      for (size_t k = 0; k < perf_top.size(); ++k) {
        const bool same = bare(builtin_top[i].get<std::string>()) == bare(perf_top[k].get<std::string>());
        common_10 += same;
        common_5 += same && i < 5 && k < 5;
      }
    }
    EXPECT_EQ(a["top_5_common"].get<int>(), common_5) << a.dump();
    EXPECT_EQ(a["top_10_common"].get<int>(), common_10) << a.dump();
    EXPECT_GE(common_10, 1) << "the two profilers of one pass share no function: " << a.dump();
    EXPECT_EQ(access((out + "/15-128MB/all.svg").c_str(), R_OK), 0);
  }
  ExpectNoServerLeft();
}

// The sample file's gate, read as the library reads it: 1 while a pass is
// recorded. -1 if there is no such file (yet).
int RecordingGate(const std::string& tmpdir) {
  std::error_code ignored;
  for (const auto& e : std::filesystem::directory_iterator(tmpdir, ignored)) {
    std::ifstream in(e.path().string() + "/samples", std::ios::binary);
    profiling::internal::SampleFileHeader header;
    if (in.read(reinterpret_cast<char*>(&header), sizeof header)) return header.recording.load();
  }
  return -1;
}

TEST_F(PgCliTest, InterruptWhileTheBuiltinSamplerRecordsLeavesNothing) {
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "pg", "--profile=builtin", "--duration=1s", "--rounds=1",
                               "--warmup=0", "--shared-buffers=128MB", "--out=" + dir_ + "/profile"},
                              dir_);
  const pid_t postmaster = WaitForProcessNamed("postgres", tool);
  ASSERT_NE(postmaster, 0) << "no server started";
  ASSERT_TRUE(test_util::WaitUntil([&] { return RecordingGate(tmpdir_) == 1 || tool.Poll().has_value(); }) &&
              RecordingGate(tmpdir_) == 1)
      << "the recorded pass never started: " << test_util::ReadFile(dir_ + "/stderr");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(kill(tool.pid(), SIGINT), 0);
  const std::optional<int> code = tool.WaitFor(test_util::kPatience);
  ASSERT_TRUE(code.has_value());
  EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 130) << *code;
  ExpectNoServerLeft();  // no server process, and TMPDIR (sample file, library copy) empty
  EXPECT_TRUE(SegmentsCreatedBy(postmaster).empty()) << "the server's System V segment was left";
}

TEST_F(PgCliTest, ViaPgBouncerMeasuresThePooledLoopBesideTheDirectOne) {
  if (!HavePgBouncer()) BACKENDLAB_SKIP(test_util::kNeedsPgBouncer) << "no pgbouncer (tools/install-deps installs it)";
  const test_util::RunResult r =
      Run(Small({"pg", "--via=pgbouncer:session,pgbouncer:transaction", "--query=SELECT 1", "--clients=2",
                 "--json=" + dir_ + "/out.json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("15/128MB via pgbouncer:transaction"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(test_util::ReadFile(dir_ + "/out.json"));
  ASSERT_EQ(j["rows"].size(), 3u) << j.dump(2);
  EXPECT_TRUE(j["rows"][0]["via"].is_null()) << "the direct row first";
  EXPECT_TRUE(j["rows"][0]["server_backends"].is_null());
  for (size_t i = 1; i < 3; ++i) {
    const nlohmann::json& row = j["rows"][i];
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["connections"], 20);
    EXPECT_GT(row["connections_per_second"].get<double>(), 0);
    // 22 client connections (2 of warm-up), 2 at a time: the pool holds at
    // most 2 server connections, so the server forks 1 or 2 backends.
    EXPECT_GE(row["server_backends"].get<int64_t>(), 1);
    EXPECT_LE(row["server_backends"].get<int64_t>(), 2);
    EXPECT_FALSE(row["pooler_cpu_us"].is_null()) << "the pooler's CPU is read";
  }
  EXPECT_EQ(j["rows"][1]["via"], "pgbouncer:session");
  EXPECT_EQ(j["rows"][2]["via"], "pgbouncer:transaction");
  ExpectNoServerLeft();  // the poolers' command lines name TMPDIR too
}

TEST_F(PgCliTest, APoolerKilledMidRunIsReportedAndNothingIsLeft) {
  if (!HavePgBouncer()) BACKENDLAB_SKIP(test_util::kNeedsPgBouncer) << "no pgbouncer (tools/install-deps installs it)";
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "pg", "--via=pgbouncer", "--duration=1s", "--rounds=100",
                               "--shared-buffers=128MB"},
                              dir_);
  const pid_t postmaster = WaitForProcessNamed("postgres", tool);
  ASSERT_NE(postmaster, 0) << "no server started";
  const pid_t pooler = WaitForProcessNamed("pgbouncer", tool);
  ASSERT_NE(pooler, 0) << "no pgbouncer started";
  ASSERT_TRUE(WaitForABackend(postmaster, tool)) << "the rounds never started: " << test_util::ReadFile(dir_ + "/stderr");
  ASSERT_EQ(kill(pooler, SIGKILL), 0);
  const std::optional<int> code = tool.WaitFor(test_util::kPatience);
  ASSERT_TRUE(code.has_value()) << "the tool did not end after its pooler died";
  EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 1) << *code;
  const std::string err = test_util::ReadFile(dir_ + "/stderr");
  EXPECT_NE(err.find("pgbouncer died during the run"), std::string::npos) << err;
  ExpectNoServerLeft();
  EXPECT_TRUE(SegmentsCreatedBy(postmaster).empty()) << "the server's System V segment was left";
}

TEST_F(PgCliTest, ConninfoLibpqCannotParseIsAUsageError) {
  const test_util::RunResult r = Run({"pg", "--conninfo=host='unterminated", "--rounds=1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab pg: --conninfo: ")) << r.err;
  ExpectNothingCreated();
}

TEST_F(PgCliTest, ConninfoThatCannotConnectIsARunFailure) {
  const test_util::RunResult r = Run({"pg", "--conninfo=host=" + tmpdir_ + " port=1 user=postgres", "--rounds=1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot connect"), std::string::npos) << r.err;
  ExpectNothingCreated();
}

TEST_F(PgCliTest, AServerKilledMidRunIsReportedAndNothingIsLeft) {
  test_util::SpawnedTool tool({BACKENDLAB_CLI_PATH, "pg", "--duration=60s", "--rounds=1", "--shared-buffers=128MB"}, dir_);
  // Wait for the postmaster, then kill it outright.
  const pid_t postmaster = WaitForProcessNamed("postgres", tool);
  ASSERT_NE(postmaster, 0) << "no server started";
  ASSERT_TRUE(WaitForABackend(postmaster, tool)) << "the loop never started: " << test_util::ReadFile(dir_ + "/stderr");
  ASSERT_FALSE(SegmentsCreatedBy(postmaster).empty()) << "the server's System V segment is where the test looks";
  ASSERT_EQ(kill(postmaster, SIGKILL), 0);
  const std::optional<int> code = tool.WaitFor(test_util::kPatience);
  ASSERT_TRUE(code.has_value()) << "the tool did not end after its server died";
  EXPECT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 1) << *code;
  const std::string err = test_util::ReadFile(dir_ + "/stderr");
  EXPECT_NE(err.find("server"), std::string::npos) << err;
  ExpectNoServerLeft();
  EXPECT_TRUE(SegmentsCreatedBy(postmaster).empty()) << "the killed server's System V segment was left";
}

TEST_F(PgCliTest, InterruptStopsTheServerAndRemovesIt) {
  ExpectInterruptLeavesNothing({BACKENDLAB_CLI_PATH, "pg", "--duration=60s", "--rounds=1", "--shared-buffers=128MB"});
}

TEST_F(PgCliTest, InterruptWithAPoolerStopsBothAndRemovesThem) {
  if (!HavePgBouncer()) BACKENDLAB_SKIP(test_util::kNeedsPgBouncer) << "no pgbouncer (tools/install-deps installs it)";
  ExpectInterruptLeavesNothing({BACKENDLAB_CLI_PATH, "pg", "--via=pgbouncer", "--duration=1s", "--rounds=100",
                                "--shared-buffers=128MB"},
                               "pgbouncer");
}

TEST_F(PgCliTest, InterruptOfCompareWithPgStopsTheServerAndRemovesIt) {
  // The mock's row comes first and is long: the server is up (its rounds
  // start once every server has), so the interrupt lands in the rounds.
  ExpectInterruptLeavesNothing({BACKENDLAB_CLI_PATH, "compare", "--with-pg", "--layouts=hash", "--exit-checks=off",
                                "--shared-buffers=128MB", "--rounds=1", "--connections=100000"},
                               "", /*backends=*/0);
}

}  // namespace
}  // namespace backendlab::tools
