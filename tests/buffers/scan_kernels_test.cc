// Scan kernels agree with a plain loop at every position, size and alignment; StreamingRead sees every byte.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "buffers/scan_kernels.h"
#include "gtest/gtest.h"

namespace backendlab::buffers {
namespace {

// Sizes beyond the sweep: large, and not a multiple of any vector width.
constexpr size_t kLargeSizes[] = {1000, 1023, 4097, 65'535, 65'536 + 13, (size_t{1} << 20) + 5};
constexpr size_t kSweepMax = 300;

template <typename T>
struct Element;
template <>
struct Element<int32_t> {
  // Non-zero in one byte only (each of the four), negative, and the extremes:
  // a kernel that looks at bytes must see every byte of an int32.
  static constexpr int32_t kValues[] = {1, 0x01000000, -1, std::numeric_limits<int32_t>::min(), 0x80, 0x100, 0x10000,
                                        std::numeric_limits<int32_t>::max()};
  // Element offsets of the start pointer: 4-byte steps off any vector alignment.
  static constexpr size_t kOffsets[] = {0, 1, 3};
};
template <>
struct Element<uint8_t> {
  static constexpr uint8_t kValues[] = {1, 0x80, 0xFF, 0x10};
  static constexpr size_t kOffsets[] = {0, 1, 3, 7};
};

// n elements starting `offset` elements into an allocation that ends exactly
// where they end, so an over-read past data[n-1] is caught by ASan.
template <typename T>
class Elements {
 public:
  Elements(size_t offset, size_t n) : storage_(offset + n), offset_(offset), n_(n) {}
  T* data() { return storage_.data() + offset_; }
  T& operator[](size_t i) { return storage_[offset_ + i]; }
  size_t size() const { return n_; }

 private:
  std::vector<T> storage_;
  size_t offset_;
  size_t n_;
};

template <typename T>
size_t Reference(const T* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (data[i] != 0) return i;
  }
  return n;
}

std::string Where(ScanKernel kernel, size_t offset, size_t n, size_t pos) {
  return std::string(ScanKernelName(kernel)) + " offset " + std::to_string(offset) + " n " + std::to_string(n) +
         " pos " + std::to_string(pos);
}

template <typename T>
class ScanKernelsTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<int32_t, uint8_t>;
struct ElementTypeName {
  template <typename T>
  static std::string GetName(int) {
    return sizeof(T) == 1 ? "uint8" : "int32";
  }
};
TYPED_TEST_SUITE(ScanKernelsTest, ElementTypes, ElementTypeName);

TYPED_TEST(ScanKernelsTest, AllZeroFindsNothing) {
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= kSweepMax; ++n) sizes.push_back(n);
  sizes.insert(sizes.end(), std::begin(kLargeSizes), std::end(kLargeSizes));
  for (size_t offset : Element<TypeParam>::kOffsets) {
    for (size_t n : sizes) {
      Elements<TypeParam> e(offset, n);
      for (ScanKernel kernel : kAllScanKernels) {
        ASSERT_EQ(FindNonZero(kernel, e.data(), n), n) << Where(kernel, offset, n, n);
      }
    }
  }
}

// Sizes 0..300 with one non-zero at every position: every head, body and tail
// position of every kernel's blocks, at every start alignment.
TYPED_TEST(ScanKernelsTest, SingleNonZeroAtEveryPosition) {
  constexpr auto& kValues = Element<TypeParam>::kValues;
  for (size_t offset : Element<TypeParam>::kOffsets) {
    for (size_t n = 1; n <= kSweepMax; ++n) {
      Elements<TypeParam> e(offset, n);
      for (size_t pos = 0; pos < n; ++pos) {
        e[pos] = kValues[(pos + n) % std::size(kValues)];
        for (ScanKernel kernel : kAllScanKernels) {
          ASSERT_EQ(FindNonZero(kernel, e.data(), n), pos) << Where(kernel, offset, n, pos);
        }
        e[pos] = 0;
      }
    }
  }
}

TYPED_TEST(ScanKernelsTest, SingleNonZeroInLargeUnalignedArrays) {
  constexpr auto& kValues = Element<TypeParam>::kValues;
  for (size_t offset : Element<TypeParam>::kOffsets) {
    for (size_t n : kLargeSizes) {
      Elements<TypeParam> e(offset, n);
      std::vector<size_t> positions = {0, 1, 7, 8, 31, 32, 33, 63, 64, 127, 128, 129, 255, 256, n / 2, n - 129,
                                       n - 128, n - 33, n - 9, n - 2, n - 1};
      for (size_t i = 0; i < positions.size(); ++i) {
        const size_t pos = positions[i];
        e[pos] = kValues[i % std::size(kValues)];
        for (ScanKernel kernel : kAllScanKernels) {
          ASSERT_EQ(FindNonZero(kernel, e.data(), n), pos) << Where(kernel, offset, n, pos);
        }
        e[pos] = 0;
      }
    }
  }
}

// Random sparse arrays: from many start points, every kernel agrees with a plain
// loop, and walking from hit to hit (as FindLeaks does) finds every non-zero.
TYPED_TEST(ScanKernelsTest, RandomSparseArraysMatchTheNaiveAnswer) {
  constexpr auto& kValues = Element<TypeParam>::kValues;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 20; ++round) {
      const size_t n = rng() % 5000;
      const uint64_t sparsity = std::vector<uint64_t>{2, 17, 300, 5000}[rng() % 4];
      Elements<TypeParam> e(rng() % 4, n);
      size_t planted = 0;
      for (size_t i = 0; i < n; ++i) {
        if (rng() % sparsity == 0) {
          e[i] = kValues[rng() % std::size(kValues)];
          ++planted;
        }
      }
      const TypeParam* data = e.data();
      for (int start_round = 0; start_round < 50; ++start_round) {
        const size_t start = n == 0 ? 0 : rng() % (n + 1);
        const size_t expected = Reference(data + start, n - start);
        for (ScanKernel kernel : kAllScanKernels) {
          ASSERT_EQ(FindNonZero(kernel, data + start, n - start), expected)
              << "seed " << seed << " " << Where(kernel, start, n - start, expected);
        }
      }
      for (ScanKernel kernel : kAllScanKernels) {
        size_t hits = 0;
        for (size_t i = FindNonZero(kernel, data, n); i < n; i = i + 1 + FindNonZero(kernel, data + i + 1, n - i - 1)) {
          ASSERT_NE(data[i], 0) << "seed " << seed << " " << ScanKernelName(kernel) << " stopped on a zero at " << i;
          ++hits;
        }
        EXPECT_EQ(hits, planted) << "seed " << seed << " " << ScanKernelName(kernel) << " n " << n;
      }
    }
  }
}

TEST(ScanKernelsInt32Test, ValuesNonZeroOnlyInOneByteOrNegative) {
  for (int32_t value : {0x01000000, 0x00010000, 0x00000100, 0x00000001, 0x7F000000, -1, -256,
                        std::numeric_limits<int32_t>::min()}) {
    for (size_t pos : {size_t{0}, size_t{5}, size_t{31}, size_t{32}, size_t{99}}) {
      std::vector<int32_t> data(100, 0);
      data[pos] = value;
      for (ScanKernel kernel : kAllScanKernels) {
        EXPECT_EQ(FindNonZero(kernel, data.data(), data.size()), pos)
            << ScanKernelName(kernel) << " value " << value << " pos " << pos;
      }
    }
  }
}

TEST(StreamingReadTest, ZeroOnlyWhenEveryByteIsZero) {
  for (size_t offset : {size_t{0}, size_t{1}, size_t{3}}) {
    for (size_t n = 0; n <= kSweepMax; ++n) {
      Elements<uint8_t> e(offset, n);
      ASSERT_EQ(StreamingRead(e.data(), n), 0u) << "offset " << offset << " n " << n;
      for (size_t pos = 0; pos < n; ++pos) {
        e[pos] = static_cast<uint8_t>(1u << (pos % 8));
        ASSERT_NE(StreamingRead(e.data(), n), 0u) << "offset " << offset << " n " << n << " pos " << pos;
        e[pos] = 0;
      }
    }
    for (size_t n : kLargeSizes) {
      Elements<uint8_t> e(offset, n);
      ASSERT_EQ(StreamingRead(e.data(), n), 0u) << "offset " << offset << " n " << n;
      for (size_t pos : {size_t{0}, size_t{127}, size_t{128}, n / 2, n - 129, n - 128, n - 1}) {
        e[pos] = 0x80;
        ASSERT_NE(StreamingRead(e.data(), n), 0u) << "offset " << offset << " n " << n << " pos " << pos;
        e[pos] = 0;
      }
    }
  }
}

TEST(ScanKernelNamesTest, ParseScanKernelRoundTripsAndRejectsUnknownNames) {
  for (ScanKernel kernel : kAllScanKernels) {
    absl::StatusOr<ScanKernel> parsed = ParseScanKernel(ScanKernelName(kernel));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kernel);
  }
  EXPECT_EQ(ScanKernelName(ScanKernel::kNaive), "naive");
  EXPECT_EQ(ScanKernelName(ScanKernel::kWord), "word");
  EXPECT_EQ(ScanKernelName(ScanKernel::kSimd), "simd");
  for (const char* bad : {"fast", "", "SIMD", "avx2"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseScanKernel(bad).status())) << "'" << bad << "'";
  }
}

TEST(ScanKernelNamesTest, SimdImplementationIsOneOfTheKnownOnes) {
  const std::string name(SimdImplementationName());
  EXPECT_TRUE(name == "avx2" || name == "sse2" || name == "word") << name;
#if defined(__x86_64__)
  // SSE2 is part of x86-64, so the portable fallback is never needed here.
  EXPECT_EQ(name, __builtin_cpu_supports("avx2") ? "avx2" : "sse2");
#endif
}

}  // namespace
}  // namespace backendlab::buffers
