// vm.nr_hugepages grown for a run and put back: by the reservation's end,
// and, for a run killed while it held them, by the next run's start.
#include "pgreal/huge_pages.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "gtest/gtest.h"
#include "tests/test_util/skip.h"

namespace backendlab::pgreal {
namespace {

// vm.nr_hugepages, -1 if it cannot be read.
int64_t NrHugePages() { return ReadNrHugePages().value_or(-1); }

class HugePagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<HugePagePool> pool = ReadHugePagePool();
    if (!pool.ok()) GTEST_SKIP() << "needs huge pages: " << pool.status().message();
    if (geteuid() != 0) BACKENDLAB_SKIP(test_util::kNeedsRoot) << "to grow vm.nr_hugepages";
    if (access(kHugePagesStateFile, F_OK) == 0) GTEST_SKIP() << "needs no other run holding huge pages";
    pool_ = *pool;
  }
  HugePagePool pool_;
};

TEST_F(HugePagesTest, AReservationGrowsThePoolByItsShortfallAndPutsItBack) {
  const int64_t before = NrHugePages();
  {
    absl::StatusOr<std::unique_ptr<HugePageReservation>> r = HugePageReservation::Reserve(pool_.free + 2);
    if (absl::IsFailedPrecondition(r.status())) GTEST_SKIP() << "needs huge pages the kernel can give: " << r.status();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->added(), 2);
    EXPECT_EQ(NrHugePages(), before + 2);
    EXPECT_EQ(access(kHugePagesStateFile, F_OK), 0) << "the change is recorded while held";
  }
  EXPECT_EQ(NrHugePages(), before);
  EXPECT_NE(access(kHugePagesStateFile, F_OK), 0);
  EXPECT_EQ(RestoreHugePagesOfEndedRun(), "") << "nothing left to put back";
}

TEST_F(HugePagesTest, ARunKilledWhileHoldingThemIsUndoneByTheNext) {
  const int64_t before = NrHugePages();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    absl::StatusOr<std::unique_ptr<HugePageReservation>> r = HugePageReservation::Reserve(pool_.free + 1);
    const char said = r.ok() ? 'y' : (absl::IsFailedPrecondition(r.status()) ? 'f' : 'n');
    (void)!write(ready[1], &said, 1);
    if (r.ok()) r->release();  // as a kill would leave it
    pause();
    _exit(0);
  }
  close(ready[1]);
  char said = 0;
  ASSERT_EQ(read(ready[0], &said, 1), 1);
  close(ready[0]);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  if (said == 'f') GTEST_SKIP() << "needs huge pages the kernel can give";
  ASSERT_EQ(said, 'y');
  EXPECT_EQ(NrHugePages(), before + 1) << "the killed run's change, still there";
  const std::string restored = RestoreHugePagesOfEndedRun();
  EXPECT_NE(restored.find("put back"), std::string::npos) << restored;
  EXPECT_EQ(NrHugePages(), before);
  EXPECT_NE(access(kHugePagesStateFile, F_OK), 0);
}

}  // namespace
}  // namespace backendlab::pgreal
