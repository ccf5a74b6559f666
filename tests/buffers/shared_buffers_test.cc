// shared_buffers sizes: what parses to which NBuffers, one clear error per bad input, and FormatSize.
#include <cstdint>
#include <string>

#include "buffers/refcount_table.h"
#include "buffers/shared_buffers.h"
#include "gtest/gtest.h"

namespace backendlab::buffers {
namespace {

constexpr uint64_t kKB = uint64_t{1} << 10;
constexpr uint64_t kMB = uint64_t{1} << 20;
constexpr uint64_t kGB = uint64_t{1} << 30;
constexpr uint64_t kTB = uint64_t{1} << 40;

struct Good {
  const char* text;
  uint64_t bytes;
  uint32_t nbuffers;
};

TEST(ParseSharedBuffersTest, AcceptsSizesWithAUnitInAnyCase) {
  const Good kGood[] = {
      {"128MB", 128 * kMB, 16'384},
      {"8GB", 8 * kGB, 1'048'576},
      {"1TB", kTB, 134'217'728},
      {"8kB", 8 * kKB, 1},
      {"8KB", 8 * kKB, 1},
      {"8kb", 8 * kKB, 1},
      {"1gb", kGB, 131'072},
      {"1Gb", kGB, 131'072},
      {"32GB", 32 * kGB, 4'194'304},
      {"1536MB", 1536 * kMB, 196'608},
      {"16kB", 16 * kKB, 2},
      {"8TB", 8 * kTB, kMaxNBuffers},  // exactly the limit: 2^30 buffers
      {"8192GB", 8192 * kGB, kMaxNBuffers},
      {"0008GB", 8 * kGB, 1'048'576},
  };
  for (const Good& g : kGood) {
    absl::StatusOr<SharedBuffers> parsed = ParseSharedBuffers(g.text);
    ASSERT_TRUE(parsed.ok()) << g.text << ": " << parsed.status();
    EXPECT_EQ(parsed->bytes, g.bytes) << g.text;
    EXPECT_EQ(parsed->nbuffers, g.nbuffers) << g.text;
    EXPECT_EQ(parsed->bytes, uint64_t{parsed->nbuffers} * kBlockSize) << g.text;
  }
}

struct Bad {
  const char* text;
  const char* problem;  // a word of the message that names what is wrong
};

TEST(ParseSharedBuffersTest, RejectsBadSizesWithAMessageNamingTheProblem) {
  const Bad kBad[] = {
      {"", "empty"},
      {"0", "greater than zero"},
      {"0MB", "greater than zero"},
      {"-1", "negative"},
      {"-1GB", "negative"},
      {"12XB", "unknown unit"},
      {"1PB", "unknown unit"},
      {"8 GB", "no space"},
      {"8\tGB", "no space"},
      {"8GB ", "unknown unit"},
      {" 8GB", "must start with a number"},
      {"GB", "must start with a number"},
      {"+8GB", "must start with a number"},
      {"8.5GB", "unknown unit"},
      {"12kB", "8kB"},  // 12 kB is not a whole number of 8 kB buffers
      {"4kB", "8kB"},
      {"16TB", "2^30"},  // 2^31 buffers
      {"8193GB", "2^30"},
      {"17179869184GB", "too large"},  // 2^64 bytes: does not fit in 64 bits
      {"99999999999999999999GB", "too large"},
      {"128", "missing unit"},
  };
  for (const Bad& b : kBad) {
    absl::StatusOr<SharedBuffers> parsed = ParseSharedBuffers(b.text);
    ASSERT_TRUE(absl::IsInvalidArgument(parsed.status())) << "'" << b.text << "' gave " << parsed.status();
    const std::string message(parsed.status().message());
    EXPECT_NE(message.find(b.problem), std::string::npos) << "'" << b.text << "': " << message;
    EXPECT_NE(message.find("shared_buffers"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

// Whitespace after the number with no unit after it: still one clear error,
// never an exception.
TEST(ParseSharedBuffersTest, RejectsTrailingWhitespaceWithoutAUnit) {
  for (const char* text : {"8 ", "8\t", "8\n", "128  "}) {
    absl::StatusOr<SharedBuffers> parsed = ParseSharedBuffers(text);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << "'" << text << "' gave " << parsed.status();
    // The CLI prints the message as one line, whatever the input held.
    EXPECT_EQ(std::string(parsed.status().message()).find('\n'), std::string::npos) << parsed.status();
  }
}

// Found by shared_buffers_fuzzer: the unit, quoted in the message, was not
// escaped, so a unit holding a line break gave a two-line error.
TEST(ParseSharedBuffersTest, EscapesTheUnitItQuotes) {
  for (const char* text : {"88\x01\n", "8M\nB", "8 G\nB"}) {
    absl::StatusOr<SharedBuffers> parsed = ParseSharedBuffers(text);
    ASSERT_TRUE(absl::IsInvalidArgument(parsed.status())) << parsed.status();
    EXPECT_EQ(std::string(parsed.status().message()).find('\n'), std::string::npos) << parsed.status();
  }
}

TEST(ParseSharedBuffersTest, SuggestsTheSpellingWithoutTheSpace) {
  absl::StatusOr<SharedBuffers> parsed = ParseSharedBuffers("8 GB");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(std::string(parsed.status().message()).find("8GB"), std::string::npos) << parsed.status();
}

TEST(FormatSizeTest, UsesTheLargestWholeUnit) {
  EXPECT_EQ(FormatSize(128 * kMB), "128MB");
  EXPECT_EQ(FormatSize(8 * kGB), "8GB");
  EXPECT_EQ(FormatSize(kTB), "1TB");
  EXPECT_EQ(FormatSize(8 * kTB), "8TB");
  EXPECT_EQ(FormatSize(8 * kKB), "8kB");
  EXPECT_EQ(FormatSize(1536 * kMB), "1536MB");  // 1.5 GB: not whole GB
  EXPECT_EQ(FormatSize(kGB + 8 * kKB), "1048584kB");
  EXPECT_EQ(FormatSize(1024 * kTB), "1024TB");
}

TEST(FormatSizeTest, RoundTripsThroughTheParser) {
  for (const char* text : {"8kB", "128MB", "1536MB", "8GB", "32GB", "1TB", "8TB", "24kB"}) {
    absl::StatusOr<SharedBuffers> parsed = ParseSharedBuffers(text);
    ASSERT_TRUE(parsed.ok()) << text;
    EXPECT_EQ(FormatSize(parsed->bytes), text);
    absl::StatusOr<SharedBuffers> again = ParseSharedBuffers(FormatSize(parsed->bytes));
    ASSERT_TRUE(again.ok()) << text;
    EXPECT_EQ(again->bytes, parsed->bytes);
  }
}

}  // namespace
}  // namespace backendlab::buffers
