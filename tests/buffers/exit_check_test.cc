// Exit-time leak check: exact reports for every layout and kernel, release, and the policy per build.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "buffers/exit_check.h"
#include "buffers/refcount_table.h"
#include "buffers/scan_kernels.h"
#include "gtest/gtest.h"
#include "tests/buffers/layout_test_types.h"

namespace backendlab::buffers {
namespace {

using test_util::CountOrMinusOne;
using test_util::OverflowEntriesOf;
using test_util::PinTimes;

constexpr uint32_t kN = 1000;

// Twelve pinned buffers, so `hash` holds four in its overflow map; counts
// include 255 and more, so `bytes` holds some in its own; the first and last
// buffers are among them. Listed ascending: what the check must report.
const std::vector<Leak> kPlanted = {{0, 1},    {1, 2},     {7, 254},   {63, 255}, {64, 256}, {128, 3},
                                    {255, 1},  {256, 300}, {500, 4},   {777, 1},  {998, 70'000}, {kN - 1, 5}};

template <typename T>
class ExitCheckTest : public ::testing::Test {
 protected:
  static T PlantedTable() {
    absl::StatusOr<T> table = T::Create(kN);
    EXPECT_TRUE(table.ok()) << table.status();
    // Pinned in a scrambled order, so no layout gets them sorted for free.
    for (size_t i = 0; i < kPlanted.size(); ++i) {
      const Leak& leak = kPlanted[(i * 5) % kPlanted.size()];
      EXPECT_TRUE(PinTimes(*table, leak.buffer, leak.count));
    }
    return *std::move(table);
  }

  static void ExpectStillPlanted(const T& table) {
    EXPECT_EQ(table.HeldCount(), kPlanted.size());
    for (const Leak& leak : kPlanted) EXPECT_EQ(CountOrMinusOne(table, leak.buffer), leak.count);
    EXPECT_EQ(table.FindLeaks(ScanKernel::kNaive), kPlanted);
  }

  static void ExpectReleased(const T& table) {
    EXPECT_EQ(table.HeldCount(), 0u);
    EXPECT_EQ(OverflowEntriesOf(table), 0u);
    for (ScanKernel kernel : kAllScanKernels) EXPECT_TRUE(table.FindLeaks(kernel).empty());
    for (const Leak& leak : kPlanted) EXPECT_EQ(CountOrMinusOne(table, leak.buffer), 0);
  }
};
TYPED_TEST_SUITE(ExitCheckTest, test_util::AllLayoutTypes, test_util::LayoutTypeName);

TYPED_TEST(ExitCheckTest, PlantedTableReallyUsesTheOverflowMaps) {
  TypeParam table = this->PlantedTable();
  this->ExpectStillPlanted(table);
  if constexpr (TypeParam::kLayout != Layout::kArray && TypeParam::kLayout != Layout::kArrayTouched) {
    EXPECT_GT(OverflowEntriesOf(table), 0u);
  }
}

TYPED_TEST(ExitCheckTest, AlwaysReportsEachLeakOnceAscendingThenReleases) {
  for (ScanKernel kernel : kAllScanKernels) {
    SCOPED_TRACE(ScanKernelName(kernel));
    TypeParam table = this->PlantedTable();
    const ExitCheckResult result = RunExitCheck(table, ExitCheckPolicy::kAlways, kernel);
    EXPECT_TRUE(result.ran);
    EXPECT_EQ(result.leaks, kPlanted);
    this->ExpectReleased(table);
    // A second check finds nothing left.
    const ExitCheckResult again = RunExitCheck(table, ExitCheckPolicy::kAlways, kernel);
    EXPECT_TRUE(again.ran);
    EXPECT_TRUE(again.leaks.empty());
  }
}

TYPED_TEST(ExitCheckTest, AlwaysOnACleanTableRunsAndFindsNothing) {
  absl::StatusOr<TypeParam> table = TypeParam::Create(kN);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE(PinTimes(*table, 5, 3));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(table->Unpin(5).ok());
  for (ScanKernel kernel : kAllScanKernels) {
    const ExitCheckResult result = RunExitCheck(*table, ExitCheckPolicy::kAlways, kernel);
    EXPECT_TRUE(result.ran);
    EXPECT_TRUE(result.leaks.empty());
  }
}

TYPED_TEST(ExitCheckTest, OffNeverRunsAndLeavesTheLeaksInPlace) {
  TypeParam table = this->PlantedTable();
  const ExitCheckResult result = RunExitCheck(table, ExitCheckPolicy::kOff, ScanKernel::kSimd);
  EXPECT_FALSE(result.ran);
  EXPECT_TRUE(result.leaks.empty());
  this->ExpectStillPlanted(table);
}

// `assert` runs exactly in the builds with assert checking; each build tests its side.
TYPED_TEST(ExitCheckTest, AssertRunsOnlyInAssertCheckingBuilds) {
  TypeParam table = this->PlantedTable();
  const ExitCheckResult result = RunExitCheck(table, ExitCheckPolicy::kAssert, ScanKernel::kWord);
  if constexpr (kAssertChecking) {
    EXPECT_TRUE(result.ran);
    EXPECT_EQ(result.leaks, kPlanted);
    this->ExpectReleased(table);
  } else {
    EXPECT_FALSE(result.ran);
    EXPECT_TRUE(result.leaks.empty());
    this->ExpectStillPlanted(table);
  }
}

TEST(ExitCheckPolicyTest, AssertCheckingFollowsTheBuildOption) {
#ifdef BACKENDLAB_USE_ASSERT_CHECKING
  EXPECT_TRUE(kAssertChecking);
  EXPECT_NE(std::string(BACKENDLAB_BUILD_TYPE).find("+assert"), std::string::npos);
#else
  EXPECT_FALSE(kAssertChecking);
  EXPECT_EQ(std::string(BACKENDLAB_BUILD_TYPE).find("+assert"), std::string::npos);
#endif
}

TEST(ExitCheckPolicyTest, ExitCheckRunsTruthTable) {
  static_assert(ExitCheckRuns(ExitCheckPolicy::kAlways), "always must run in every build");
  static_assert(!ExitCheckRuns(ExitCheckPolicy::kOff), "off must never run");
  static_assert(ExitCheckRuns(ExitCheckPolicy::kAssert) == kAssertChecking,
                "assert runs exactly in assert-checking builds");
  EXPECT_TRUE(ExitCheckRuns(ExitCheckPolicy::kAlways));
  EXPECT_FALSE(ExitCheckRuns(ExitCheckPolicy::kOff));
  EXPECT_EQ(ExitCheckRuns(ExitCheckPolicy::kAssert), kAssertChecking);
}

TEST(ExitCheckPolicyTest, ParseRoundTripsAndRejectsUnknownNames) {
  for (ExitCheckPolicy policy : kAllExitCheckPolicies) {
    absl::StatusOr<ExitCheckPolicy> parsed = ParseExitCheckPolicy(ExitCheckPolicyName(policy));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, policy);
  }
  EXPECT_EQ(ExitCheckPolicyName(ExitCheckPolicy::kAlways), "always");
  EXPECT_EQ(ExitCheckPolicyName(ExitCheckPolicy::kAssert), "assert");
  EXPECT_EQ(ExitCheckPolicyName(ExitCheckPolicy::kOff), "off");
  for (const char* bad : {"sometimes", "", "Always", "off "}) {
    absl::StatusOr<ExitCheckPolicy> parsed = ParseExitCheckPolicy(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << "'" << bad << "'";
  }
  EXPECT_NE(std::string(ParseExitCheckPolicy("sometimes").status().message()).find("sometimes"), std::string::npos);
}

TEST(FormatLeakWarningTest, NamesTheBufferAndItsCount) {
  const std::string line = FormatLeakWarning({4242, 70'001});
  EXPECT_NE(line.find("4242"), std::string::npos) << line;
  EXPECT_NE(line.find("70001"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line: " << line;
  // Different leaks, different lines.
  EXPECT_NE(FormatLeakWarning({1, 2}), FormatLeakWarning({2, 1}));
}

}  // namespace
}  // namespace backendlab::buffers
