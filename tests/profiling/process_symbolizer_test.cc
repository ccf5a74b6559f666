// ProcessSymbolizer on this test's own address space, read as another
// process's would be (/proc/self/maps as text): its functions, libc's, and
// the pcs no file names.
#include "profiling/process_symbolizer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/test_util/run_program.h"

// Functions with known names, kept out of line.
extern "C" __attribute__((noinline)) int ProcessSymbolizerTestTarget(int x) { return x * 3 + 1; }

namespace backendlab::profiling {
namespace {

__attribute__((noinline)) int StaticTarget(int x) { return x * 5 + 2; }

std::string WithoutLeadingUnderscores(std::string name) { return name.substr(name.find_first_not_of('_')); }

std::unique_ptr<ProcessSymbolizer> OfThisProcess() {
  absl::StatusOr<std::unique_ptr<ProcessSymbolizer>> s = ProcessSymbolizer::FromMaps(test_util::ReadFile("/proc/self/maps"));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(ProcessSymbolizerTest, NamesFunctionsOfTheExecutableAndOfLibc) {
  std::unique_ptr<ProcessSymbolizer> symbolizer = OfThisProcess();
  ASSERT_NE(symbolizer, nullptr);
  const auto pc = [](auto* f, int into) { return reinterpret_cast<uintptr_t>(f) + into; };
  EXPECT_EQ(symbolizer->Name(pc(&ProcessSymbolizerTestTarget, 1), false), "ProcessSymbolizerTestTarget");
  // A static C++ function: from .symtab, demangled and shortened.
  EXPECT_EQ(symbolizer->Name(pc(&StaticTarget, 1), false), "backendlab::profiling::(anonymous namespace)::StaticTarget");
  // A return address is looked up one byte back: the end of a function is still it.
  EXPECT_EQ(symbolizer->Name(pc(&ProcessSymbolizerTestTarget, 1), true), "ProcessSymbolizerTestTarget");
  // libc's aliases differ by underscores only (getpid, __getpid).
  EXPECT_EQ(WithoutLeadingUnderscores(symbolizer->Name(pc(&getpid, 0), false)), "getpid");
  EXPECT_TRUE(symbolizer->unreadable().empty());
}

TEST(ProcessSymbolizerTest, PcsOutsideFilesAreNamedByTheirMapping) {
  void* anon = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  std::unique_ptr<ProcessSymbolizer> symbolizer = OfThisProcess();
  munmap(anon, 4096);
  ASSERT_NE(symbolizer, nullptr);
  EXPECT_EQ(symbolizer->Name(reinterpret_cast<uintptr_t>(anon) + 8, false), "[anon]");
  EXPECT_EQ(symbolizer->Name(8, false), "[unknown]") << "page 0 is never mapped";
}

TEST(ProcessSymbolizerTest, MapsThatDoNotParseNameTheirLine) {
  absl::StatusOr<std::unique_ptr<ProcessSymbolizer>> s =
      ProcessSymbolizer::FromMaps("1000-2000 r-xp 00000000 08:01 12 /bin/x\nnonsense\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("line 2"), std::string::npos) << s.status();
  // A file that cannot be read is named by its file, and said once.
  absl::StatusOr<std::unique_ptr<ProcessSymbolizer>> gone =
      ProcessSymbolizer::FromMaps("1000-2000 r-xp 00000000 08:01 12 /nonexistent/libgone.so (deleted)\n");
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ((*gone)->Name(0x1800, false), "[libgone.so]");
  EXPECT_EQ((*gone)->Name(0x1900, false), "[libgone.so]");
  EXPECT_EQ((*gone)->unreadable().size(), 1u);
}

TEST(ProcessSymbolizerTest, AProcessThatDoesNotExistIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(ProcessSymbolizer::OfProcess(0x3ffffff0).status()));
}

}  // namespace
}  // namespace backendlab::profiling
