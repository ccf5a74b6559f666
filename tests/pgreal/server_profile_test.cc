// ProfileServer's pieces on canned perf output (a capture of a real
// backend's life on Debian's PostgreSQL 15, edited by hand where the test
// needs a case the capture lacked) and on a real server (pgreal::Server).
#include "pgreal/server_profile.h"

#include <algorithm>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "pgreal/connect_loop.h"
#include "pgreal/installation.h"
#include "pgreal/phase_rules.h"
#include "pgreal/server.h"
#include "profiling/perf_events.h"
#include "profiling/process_tree.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"
#include "tests/test_util/skip.h"

namespace backendlab::pgreal {
namespace {

std::string ReadTestData(const std::string& name) {
  std::ifstream in(std::string(BACKENDLAB_PGREAL_TESTDATA) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ServerProfileTest, CannedBackendLifeIsClassified) {
  // A perf script capture of Debian's 15 under pgbench -C, edited by hand:
  // postmaster 4109, its checkpointer 4110 alive at perf's start (its one
  // sample added by hand), backend 4175 forked during the recording and
  // more forks of the postmaster added by hand; pgbench samples are not
  // the server's.
  const std::string script = ReadTestData("pg15_backend.perf-script");
  absl::StatusOr<ServerProfile> profile = BuildServerProfile(script, 4109, {{4110, "checkpointer"}}, 15);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->other_samples, 2);  // the two pgbench samples
  EXPECT_GT(profile->server_samples, 30);
  EXPECT_EQ(profile->backends_forked, 3);  // 4175, 4176, 4177 (synthesized forks not counted)
  EXPECT_GT(profile->SamplesIn("fork"), 0);
  EXPECT_GT(profile->SamplesIn("init"), 0);
  EXPECT_GT(profile->SamplesIn("auth"), 0);
  EXPECT_GT(profile->SamplesIn("exit"), 0);
  int64_t sum = 0;
  for (const PhaseSamples& p : profile->phases) sum += p.samples;
  EXPECT_EQ(sum, profile->server_samples);
  EXPECT_EQ(profile->phases.back().phase, kUnclaimed);
  EXPECT_EQ(profile->unclaimed_samples, profile->SamplesIn(kUnclaimed));
  EXPECT_GT(profile->stacks.Under("backend").total_samples(), 0);
  EXPECT_GT(profile->stacks.Under("postmaster").total_samples(), 0);
  EXPECT_EQ(profile->stacks.Under("checkpointer").total_samples(), 1) << "an auxiliary process under its own name";
  EXPECT_EQ(profile->SamplesIn("aux"), 1);
  // Kernel frames kept: the postmaster's fork shows copy_process.
  EXPECT_NE(profile->by_phase.at("fork").ToText().find("copy_process"), std::string::npos);
}

// A pid the server used is reused by another process: its later samples are
// not the server's. Threads (pid == parent pid) join their process.
constexpr char kReusedPid[] = R"(perf     0/0         0.000000: PERF_RECORD_FORK(100:100):(1:1)
postgres  100/100  1.000000: PERF_RECORD_FORK(200:200):(100:100)
postgres  200/200  1.100000: cpu-clock:
	          5b23f5 InitPostgres (/usr/lib/postgresql/15/bin/postgres)
	          472a57 PostgresMain (/usr/lib/postgresql/15/bin/postgres)
	          3f0c64 PostmasterMain (/usr/lib/postgresql/15/bin/postgres)

postgres  200/200  1.200000: PERF_RECORD_EXIT(200:200):(100:100)
bash  300/300  1.300000: PERF_RECORD_FORK(200:200):(300:300)
bash  200/200  1.400000: cpu-clock:
	          3e699 exit (/usr/lib/x86_64-linux-gnu/libc.so.6)

postgres  100/100  1.500000: PERF_RECORD_FORK(100:101):(100:100)
postgres  100/101  1.600000: cpu-clock:
	ffffffff8135e928 copy_process ([kernel.kallsyms])
	          3f0c64 PostmasterMain (/usr/lib/postgresql/15/bin/postgres)

)";

TEST(ServerProfileTest, FollowsTheTreeThroughForksAndPidReuse) {
  absl::StatusOr<ServerProfile> profile = BuildServerProfile(kReusedPid, 100, {}, 15);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->server_samples, 2);
  EXPECT_EQ(profile->other_samples, 1);
  EXPECT_EQ(profile->SamplesIn("init"), 1);
  EXPECT_EQ(profile->SamplesIn("fork"), 1);  // the postmaster's thread 101
  EXPECT_EQ(profile->SamplesIn("exit"), 0);  // bash's exit is not the server's
  EXPECT_EQ(profile->backends_forked, 1);
}

TEST(ServerProfileTest, MalformedTaskRecordNamesItsLine) {
  absl::StatusOr<ServerProfile> profile =
      BuildServerProfile("x  1/1  1.0: PERF_RECORD_FORK(12:12):(oops)\n", 1, {}, 15);
  ASSERT_FALSE(profile.ok());
  EXPECT_NE(profile.status().message().find("line 1"), std::string::npos) << profile.status();
}

// --- a real server ---------------------------------------------------------

// Debian's PostgreSQL 15, started by the module's own Server, and perf.
class RealServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Installation> installation = DefaultInstallation();
    if (!installation.ok()) BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << installation.status().message();
    if (std::system("command -v perf >/dev/null 2>&1") != 0) {
      BACKENDLAB_SKIP(test_util::kNeedsPerf) << "perf is not installed (apt-get install linux-perf)";
    }
    if (geteuid() != 0) {
      const std::optional<int> paranoid = profiling::PerfEventParanoid();
      if (!paranoid || *paranoid > 0) {
        BACKENDLAB_SKIP(test_util::kNeedsRoot) << "perf record -a needs root or kernel.perf_event_paranoid <= 0";
      }
    } else if (getpwnam("postgres") == nullptr) {
      BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << "running as root and there is no user postgres to run the server as";
    }
    ServerOptions options;
    options.installation = *installation;
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  void TearDown() override {
    if (server_ != nullptr) {
      EXPECT_TRUE(server_->Stop().ok());
    }
  }

  std::unique_ptr<Server> server_;
};

TEST_F(RealServerTest, BackendsAreFoundAndClassified) {
  constexpr int kConnections = 30;
  LoopOptions loop;
  loop.conninfo = server_->conninfo();
  loop.connections = kConnections;
  loop.warmup = 0;
  loop.query = "SELECT 1";
  auto workload = [&]() -> absl::Status { return RunConnectLoop(loop).status(); };
  ServerProfileOptions options;
  options.major = 15;
  absl::StatusOr<ServerProfile> profile = ProfileServer(server_->postmaster_pid(), options, workload);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->unwinder, "dwarf");
  EXPECT_GE(profile->backends_forked, kConnections);
  EXPECT_GT(profile->stacks.Under("backend").total_samples(), 0);
  EXPECT_GT(profile->SamplesIn("init"), 0);
  EXPECT_GT(profile->SamplesIn("exit"), 0);
  int64_t sum = 0;
  for (const PhaseSamples& p : profile->phases) sum += p.samples;
  EXPECT_EQ(sum, profile->server_samples) << "every sample in one phase row or unclaimed";
  EXPECT_LT(profile->unclaimed_samples, profile->server_samples);
  EXPECT_GT(profile->record_seconds, 0);
}

// --- the built-in sampler in a real server --------------------------------

// Debian's PostgreSQL 15 with the sampler library, each server of a test a
// copy of one initdb's data directory (an initdb costs seconds), in a
// private TMPDIR that must be empty again after the test.
class BuiltinSamplerTest : public test_util::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    absl::StatusOr<Installation> installation = DefaultInstallation();
    if (!installation.ok()) BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << installation.status().message();
    if (geteuid() == 0 && getpwnam("postgres") == nullptr) {
      BACKENDLAB_SKIP(test_util::kNeedsPostgresql) << "running as root and there is no user postgres to run the server as";
    }
    options_.installation = *installation;
    options_.builtin_sampler_hz = 999;
    absl::StatusOr<std::unique_ptr<Server>> created = Server::Create(options_);
    ASSERT_TRUE(created.ok()) << created.status();
    template_ = std::move(*created);
    // The server's user must reach its directory inside TMPDIR.
    ASSERT_EQ(chmod(dir_.c_str(), 0711), 0);
    tmpdir_.emplace("TMPDIR", dir_);
  }

  void TearDown() override {
    tmpdir_.reset();
    template_.reset();
    if (!dir_.empty()) {
      EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "a server, its sample file or its library copy was left";
    }
    TempDirTest::TearDown();
  }

  absl::StatusOr<std::unique_ptr<Server>> StartServer() { return Server::Start(options_, template_->data_directory()); }

  ServerOptions options_;
  std::unique_ptr<Server> template_;  // created, never started
  std::optional<test_util::ScopedEnv> tmpdir_;
};

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// One test for two behaviours, so that they share one initdb (ctest runs
// each test in a process of its own).
TEST_F(BuiltinSamplerTest, SamplesBackendsForkedAfterStartAndRefusesAServerWithoutATimer) {
  {
    SCOPED_TRACE("a postmaster whose timer cannot be armed");
    const test_util::ScopedEnv refuse("BACKENDLAB_SAMPLER_FAIL_TIMER", "postmaster");
    absl::StatusOr<std::unique_ptr<Server>> refused = StartServer();
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("the built-in sampler did not start"), std::string::npos)
        << refused.status();
    EXPECT_NE(refused.status().message().find("could not be armed"), std::string::npos)
        << "the log's tail holds the library's one line: " << refused.status();
  }
  absl::StatusOr<std::unique_ptr<Server>> server = StartServer();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_NE((*server)->sample_file(), nullptr);
  // A CPU-time timer fires on the kernel's ticks (4 ms at CONFIG_HZ=250): a
  // backend's ~10 ms of start-up gets a few samples or none, as its bursts
  // and the ticks fall, and under load fewer. So the test gathers evidence
  // rather than doing a fixed amount of work: batches of connections until
  // the backends gave kBackendSamples (every check below then holds by a
  // wide margin: init is a quarter of a backend's samples, so none of 60
  // in init has odds of 0.75^60 ~ 1e-8), or it fails after kLimit saying
  // how far it got.
  constexpr int64_t kBackendSamples = 60;
  constexpr int kBatch = 30;
  constexpr auto kLimit = std::chrono::minutes(3);
  LoopOptions loop;
  loop.conninfo = (*server)->conninfo();
  loop.connections = kBatch;
  loop.warmup = 0;
  loop.query = "SELECT 1";
  const pid_t postmaster = (*server)->postmaster_pid();
  // The backends' samples: not the postmaster's, nor its auxiliary
  // processes' (the checkpointer's, say), as the profile's roles count them.
  const absl::flat_hash_map<int64_t, std::string> aux = AuxiliaryProcesses(postmaster);
  profiling::SampleFile& file = *(*server)->sample_file();
  int64_t connections = 0, backend_samples = 0;
  BuiltinRecording recording(postmaster, file, 15);
  ASSERT_TRUE(recording
                  .Record([&]() -> absl::Status {
                    const auto give_up = std::chrono::steady_clock::now() + kLimit;
                    while (backend_samples < kBackendSamples && std::chrono::steady_clock::now() < give_up) {
                      if (absl::Status s = RunConnectLoop(loop).status(); !s.ok()) return s;
                      connections += kBatch;
                      backend_samples = 0;
                      for (const profiling::RawSample& sample : file.Samples(nullptr)) {
                        backend_samples += sample.pid != postmaster && !aux.contains(sample.pid);
                      }
                    }
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_GE(backend_samples, kBackendSamples)
      << "the backends of " << connections << " connections gave " << backend_samples << " samples in "
      << std::chrono::duration_cast<std::chrono::seconds>(kLimit).count() << " s";
  absl::StatusOr<ServerProfile> profile = recording.Profile();
  ASSERT_TRUE(profile.ok()) << profile.status();
  const std::string log = test_util::ReadFile((*server)->directory() + "/server.log");
  EXPECT_EQ(Occurrences(log, "backendlab sampler:"), 1) << "one line, the postmaster's: " << log;
  EXPECT_NE(log.find("sampling this process"), std::string::npos) << log;
  EXPECT_TRUE((*server)->CheckRunning().ok());
  EXPECT_TRUE((*server)->Stop().ok());

  EXPECT_EQ(profile->profiler, "builtin");
  EXPECT_EQ(profile->unwinder, "libunwind");
  EXPECT_GE(profile->backends_forked, connections) << "every backend forked after the start has a timer";
  EXPECT_EQ(profile->unarmed_processes, 0);
  EXPECT_EQ(profile->lost_samples, 0);
  EXPECT_GE(profile->stacks.Under("backend").total_samples(), kBackendSamples) << "samples arrive from the backends";
  EXPECT_GT(profile->SamplesIn("init"), 0);
  int64_t sum = 0;
  for (const PhaseSamples& p : profile->phases) sum += p.samples;
  EXPECT_EQ(sum, profile->server_samples) << "every sample in one phase row or unclaimed";
  EXPECT_LT(profile->unclaimed_samples * 4, profile->server_samples) << "most samples are claimed by a rule";
  EXPECT_EQ(profile->user_stacks, profile->stacks) << "a user-space sampler's stacks are all user space";
  // Symbolized from the server's own binary and libraries.
  const std::string stacks = profile->stacks.ToText();
  EXPECT_NE(stacks.find("PostgresMain"), std::string::npos);
  EXPECT_NE(stacks.find("InitPostgres"), std::string::npos);
}

// The index of `phase` in kRealPhaseNames, as a timeline records it.
int32_t PhaseIndex(std::string_view phase) {
  const absl::StatusOr<RealPhase> p = ParseName(phase, kRealPhaseNames, "phase");
  return p.ok() ? static_cast<int32_t>(*p) : kNumRealPhases;
}

// A timeline by hand: the postmaster forking, two backends, an auxiliary
// process; at 1 kHz a run of samples one period apart is one span, a gap of
// more than two periods starts another, and only the first `backends`
// backends get a track.
TEST(ServerProfileTest, TraceSpansAreRunsOfOneProcessInOnePhase) {
  ServerProfile p;
  p.frequency_hz = 1000;
  p.postmaster_pid = 1;
  p.aux_pids = {2};
  const int64_t ms = 1'000'000;
  p.timeline = {{1, 0, PhaseIndex("fork")},         {5, 1 * ms, PhaseIndex("init")},
                {1, 1 * ms, PhaseIndex("fork")},    {5, 2 * ms, PhaseIndex("init")},
                {2, 2 * ms, PhaseIndex("aux")},     {6, 3 * ms, PhaseIndex("init")},
                {5, 3 * ms, PhaseIndex("exit")},    {5, 9 * ms, PhaseIndex("exit")},
                {1, 6 * ms, PhaseIndex("fork")}};
  const std::vector<profiling::TraceSpan> spans = TraceSpans(p, /*backends=*/1);
  ASSERT_EQ(spans.size(), 5u);
  auto is = [](const profiling::TraceSpan& s, int64_t pid, std::string_view name, int64_t start, int64_t dur) {
    return s.pid == pid && s.name == name && s.start_ns == start && s.duration_ns == dur;
  };
  EXPECT_TRUE(is(spans[0], 1, "fork", 0, 2 * ms)) << "two samples a period apart: from the first to a period after the last";
  EXPECT_EQ(spans[0].process, "postmaster");
  EXPECT_TRUE(is(spans[1], 5, "init", 1 * ms, 2 * ms));
  EXPECT_EQ(spans[1].process, "backend 5");
  EXPECT_TRUE(is(spans[2], 5, "exit", 3 * ms, 1 * ms)) << "another phase: another span";
  EXPECT_TRUE(is(spans[3], 5, "exit", 9 * ms, 1 * ms)) << "six periods later: another span";
  EXPECT_TRUE(is(spans[4], 1, "fork", 6 * ms, 1 * ms)) << "four periods after its last span's end";
  for (const profiling::TraceSpan& s : spans) EXPECT_NE(s.pid, 6) << "beyond the first backend";
  for (const profiling::TraceSpan& s : spans) EXPECT_NE(s.pid, 2) << "an auxiliary process has no track";
  EXPECT_TRUE(TraceSpans(ServerProfile{}, 10).empty()) << "no timeline (the built-in sampler's): no span";
}

TEST(ServerProfileTest, LabeledStacksPutEachSamplesPhaseAfterItsRole) {
  ServerProfile p;
  p.by_phase["init"].Add(std::vector<std::string>{"backend", "main", "InitPostgres"}, 3);
  p.by_phase["reap"].Add(std::vector<std::string>{"postmaster", "main", "__wait4"}, 2);
  EXPECT_EQ(LabeledStacks(p).ToText(), "backend;[init];main;InitPostgres 3\npostmaster;[reap];main;__wait4 2\n");
}

TEST(ProfileServerTest, NoSuchPostmasterIsNotFound) {
  absl::StatusOr<ServerProfile> profile = ProfileServer(0x3ffffff0, {}, [] { return absl::OkStatus(); });
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kNotFound) << profile.status();
}

}  // namespace
}  // namespace backendlab::pgreal
