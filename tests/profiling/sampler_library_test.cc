// The sampler library (libbackendlab_sampler.so) in a program of its own,
// without a server: idle and said once where it is not asked for, samples of
// the named process and its forks through fully blocked signal masks, and a
// timer that cannot be armed said once, however many processes meet it.
#include "profiling/sample_file.h"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "profiling/process_symbolizer.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/temp_dir.h"

namespace backendlab::profiling {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class SamplerLibraryTest : public test_util::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    absl::StatusOr<SampleFile> file = SampleFile::Create(dir_ + "/samples", 4096, 1000, std::nullopt);
    ASSERT_TRUE(file.ok()) << file.status();
    file_.emplace(std::move(*file));
  }

  // Runs the probe (CHILDREN children, CPU_MS each) through a shell that
  // sets `assignments` for it alone: the probe gets the library, the shell
  // does not. "$$" is the shell's pid, which exec leaves to the probe.
  test_util::RunResult RunProbe(const std::string& assignments, int children, int cpu_ms) {
    const std::string command = assignments + " exec \"$0\" \"$@\"";
    return test_util::RunProgram({"/bin/sh", "-c", command, SAMPLER_LIBRARY_PROBE_PATH, maps_path(),
                                  std::to_string(children), std::to_string(cpu_ms)},
                                 dir_);
  }
  std::string Preload() const { return "LD_PRELOAD=" + SamplerLibraryPath(); }
  std::string FileVariable() const { return "BACKENDLAB_SAMPLER_FILE=" + file_->path(); }
  std::string maps_path() const { return dir_ + "/maps"; }

  std::optional<SampleFile> file_;
};

TEST_F(SamplerLibraryTest, IdleWithoutTheToolSaysSoOnce) {
  const test_util::RunResult r = RunProbe(Preload(), 2, 5);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab sampler: pid "));
  EXPECT_NE(r.err.find("idle"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("BACKENDLAB_SAMPLER_FILE is not set"), std::string::npos) << r.err;
}

TEST_F(SamplerLibraryTest, IdleInAProcessThatIsNotTheNamedOne) {
  file_->SetRecording(true);
  const test_util::RunResult r = RunProbe(Preload() + " " + FileVariable() + " BACKENDLAB_SAMPLER_PID=1", 2, 5);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab sampler: pid ")) << "said once, not per child";
  EXPECT_NE(r.err.find("not the process the tool started"), std::string::npos) << r.err;
  EXPECT_EQ(file_->sampler_pid(), 0);
  EXPECT_EQ(file_->armed(), 0);
  EXPECT_TRUE(file_->Samples(nullptr).empty());
}

// The probe blocks every signal, as a postmaster does around its work: the
// library keeps SIGPROF out of the mask, so the samples land in the burning
// function, not at a later unblock.
TEST_F(SamplerLibraryTest, SamplesTheNamedProcessAndItsForksThroughBlockedSignals) {
  constexpr int kChildren = 3;
  file_->SetRecording(true);
  const test_util::RunResult r = RunProbe(Preload() + " " + FileVariable() + " BACKENDLAB_SAMPLER_PID=$$", kChildren, 60);
  file_->SetRecording(false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab sampler: pid "));
  EXPECT_NE(r.err.find("sampling this process"), std::string::npos) << r.err;
  EXPECT_GT(file_->sampler_pid(), 0);
  EXPECT_EQ(file_->armed(), 1 + kChildren);
  EXPECT_EQ(file_->failed(), 0);
  int64_t torn = -1;
  const std::vector<RawSample> samples = file_->Samples(&torn);
  EXPECT_EQ(torn, 0);
  ASSERT_FALSE(samples.empty());
  absl::StatusOr<std::unique_ptr<ProcessSymbolizer>> symbolizer =
      ProcessSymbolizer::FromMaps(test_util::ReadFile(maps_path()));
  ASSERT_TRUE(symbolizer.ok()) << symbolizer.status();
  std::set<int32_t> pids;
  int in_burn = 0;
  for (const RawSample& s : samples) {
    pids.insert(s.pid);
    bool burning = false;
    for (int i = 0; i < s.depth; ++i) burning |= (*symbolizer)->Name(s.pcs[i], i > 0) == "ProbeBurnCpu";
    in_burn += burning;
  }
  EXPECT_GE(pids.size(), static_cast<size_t>(kChildren)) << "60 ms of CPU each: the parent and nearly every child";
  EXPECT_GE(in_burn * 10, static_cast<int>(samples.size()) * 8)
      << in_burn << " of " << samples.size() << " samples in ProbeBurnCpu: signals were deferred to an unblock";
  // main, and libc's start under it, named from the files' symbol tables.
  bool main_seen = false;
  for (const RawSample& s : samples) {
    for (int i = 1; i < s.depth; ++i) main_seen |= (*symbolizer)->Name(s.pcs[i], true) == "main";
  }
  EXPECT_TRUE(main_seen);
}

TEST_F(SamplerLibraryTest, ATimerThatCannotBeArmedIsSaidOnce) {
  constexpr int kChildren = 3;
  const std::string asked = Preload() + " " + FileVariable() + " BACKENDLAB_SAMPLER_PID=$$";
  const test_util::RunResult children = RunProbe(asked + " BACKENDLAB_SAMPLER_FAIL_TIMER=children", kChildren, 5);
  EXPECT_EQ(children.exit_code, 0) << children.err;
  EXPECT_EQ(Count(children.err, "could not be armed"), 1) << "once for " << kChildren << " children: " << children.err;
  EXPECT_EQ(file_->armed(), 1);
  EXPECT_EQ(file_->failed(), kChildren);

  absl::StatusOr<SampleFile> fresh = SampleFile::Create(dir_ + "/samples2", 64, 1000, std::nullopt);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const test_util::RunResult postmaster =
      RunProbe(Preload() + " BACKENDLAB_SAMPLER_FILE=" + fresh->path() +
                   " BACKENDLAB_SAMPLER_PID=$$ BACKENDLAB_SAMPLER_FAIL_TIMER=postmaster",
               kChildren, 5);
  EXPECT_EQ(postmaster.exit_code, 0) << postmaster.err;
  EXPECT_TRUE(test_util::IsOneLineStartingWith(postmaster.err, "backendlab sampler: pid "));
  EXPECT_NE(postmaster.err.find("could not be armed"), std::string::npos) << postmaster.err;
  EXPECT_EQ(fresh->sampler_pid(), 0);
  EXPECT_EQ(fresh->failed(), 1);
  EXPECT_EQ(fresh->armed(), 0);
}

TEST(SamplerLibraryFileTest, CreateRefusesAnExistingPathAndBadFrequencies) {
  const std::string path = ::testing::TempDir() + "backendlab_samplefile_" + std::to_string(getpid());
  {
    absl::StatusOr<SampleFile> file = SampleFile::Create(path, 16, 999, std::nullopt);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(file->frequency_hz(), 999);
    EXPECT_FALSE(SampleFile::Create(path, 16, 999, std::nullopt).ok()) << "an existing file is never reused";
  }
  unlink(path.c_str());
  EXPECT_TRUE(absl::IsInvalidArgument(SampleFile::Create(path, 16, 0, std::nullopt).status()));
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "a refused create leaves no file";
}

}  // namespace
}  // namespace backendlab::profiling
