// What calibration reads off a real postmaster: its libraries.
#include "calibrate/calibration.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "gtest/gtest.h"

namespace backendlab::calibrate {
namespace {

TEST(MappedLibrariesTest, ThisProcessHasLibcAndNoLoader) {
  absl::StatusOr<std::vector<std::string>> libs = MappedLibraries(getpid());
  ASSERT_TRUE(libs.ok()) << libs.status();
  EXPECT_TRUE(std::any_of(libs->begin(), libs->end(), [](const std::string& l) { return l.find("/libc.so") != std::string::npos; }));
  for (const std::string& l : *libs) {
    EXPECT_EQ(l.find("ld-linux"), std::string::npos) << l;
    EXPECT_EQ(l.front(), '/') << l;
    EXPECT_EQ(std::count(libs->begin(), libs->end(), l), 1) << "listed once: " << l;
  }
  EXPECT_FALSE(MappedLibraries(-1).ok());
}

TEST(CalibrationTest, BadOptionsAreRefused) {
  CalibrationOptions o;
  o.connections = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(RunCalibration(o).status()));
  o = {};
  o.iterations = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(RunCalibration(o).status()));
}

}  // namespace
}  // namespace backendlab::calibrate
