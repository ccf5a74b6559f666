// Scan kernels: naive, word-at-a-time and SIMD (AVX2 chosen at run time).
#include "buffers/scan_kernels.h"

#include <cstring>

#include "base/names.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace backendlab::buffers {
namespace {

template <typename T>
size_t NaiveFind(const T* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (data[i] != 0) return i;
  }
  return n;
}

// Word-at-a-time over bytes: 8 bytes a load, then the exact byte of the word.
size_t WordFindByte(const uint8_t* data, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, sizeof word);  // unaligned-safe, one load
    if (word != 0) return i + static_cast<size_t>(__builtin_ctzll(word)) / 8;  // little-endian
  }
  return i + NaiveFind(data + i, n - i);
}

#if defined(__x86_64__)
// 128 bytes an iteration: four unaligned 32-byte loads OR-ed, one test. The
// memory system, not the instruction count, bounds this loop on large tables.
__attribute__((target("avx2"))) size_t Avx2FindByte(const uint8_t* data, size_t n) {
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const auto* p = reinterpret_cast<const __m256i*>(data + i);
    __m256i v = _mm256_or_si256(_mm256_or_si256(_mm256_loadu_si256(p), _mm256_loadu_si256(p + 1)),
                                _mm256_or_si256(_mm256_loadu_si256(p + 2), _mm256_loadu_si256(p + 3)));
    if (!_mm256_testz_si256(v, v)) break;  // the hit is in this block; narrow it down below
  }
  return i + WordFindByte(data + i, n - i);
}

// SSE2 is part of x86-64, so this needs no detection.
size_t Sse2FindByte(const uint8_t* data, size_t n) {
  size_t i = 0;
  const __m128i zero = _mm_setzero_si128();
  for (; i + 64 <= n; i += 64) {
    const auto* p = reinterpret_cast<const __m128i*>(data + i);
    __m128i v = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(p), _mm_loadu_si128(p + 1)),
                             _mm_or_si128(_mm_loadu_si128(p + 2), _mm_loadu_si128(p + 3)));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) != 0xFFFF) break;
  }
  return i + WordFindByte(data + i, n - i);
}

__attribute__((target("avx2"))) uint64_t Avx2StreamingRead(const uint8_t* data, size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const auto* p = reinterpret_cast<const __m256i*>(data + i);
    a = _mm256_or_si256(a, _mm256_loadu_si256(p));
    b = _mm256_or_si256(b, _mm256_loadu_si256(p + 1));
    c = _mm256_or_si256(c, _mm256_loadu_si256(p + 2));
    d = _mm256_or_si256(d, _mm256_loadu_si256(p + 3));
  }
  __m256i v = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
  uint64_t out = static_cast<uint64_t>(_mm256_extract_epi64(v, 0) | _mm256_extract_epi64(v, 1) |
                                       _mm256_extract_epi64(v, 2) | _mm256_extract_epi64(v, 3));
  for (; i < n; ++i) out |= data[i];
  return out;
}
#endif

uint64_t WordStreamingRead(const uint8_t* data, size_t n) {
  uint64_t out = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, sizeof word);
    out |= word;
  }
  for (; i < n; ++i) out |= data[i];
  return out;
}

enum class SimdImpl { kAvx2, kSse2, kWord };
constexpr NamedValue<SimdImpl> kSimdImplNames[] = {
    {SimdImpl::kAvx2, "avx2"}, {SimdImpl::kSse2, "sse2"}, {SimdImpl::kWord, "word"}};

SimdImpl DetectSimd() {
#if defined(__x86_64__)
  // ASan's and UBSan's runtimes are fine with __builtin_cpu_supports; it reads CPUID once.
  if (__builtin_cpu_supports("avx2")) return SimdImpl::kAvx2;
  return SimdImpl::kSse2;
#else
  return SimdImpl::kWord;
#endif
}

const SimdImpl kSimdImpl = DetectSimd();

size_t SimdFindByte(const uint8_t* data, size_t n) {
  switch (kSimdImpl) {
#if defined(__x86_64__)
    case SimdImpl::kAvx2: return Avx2FindByte(data, n);
    case SimdImpl::kSse2: return Sse2FindByte(data, n);
#endif
    default: return WordFindByte(data, n);
  }
}

size_t FindByte(ScanKernel kernel, const uint8_t* data, size_t n) {
  switch (kernel) {
    case ScanKernel::kNaive: return NaiveFind(data, n);
    case ScanKernel::kWord: return WordFindByte(data, n);
    case ScanKernel::kSimd: return SimdFindByte(data, n);
  }
  return NaiveFind(data, n);
}

}  // namespace

std::string_view ScanKernelName(ScanKernel kernel) { return NameOf(kernel, kScanKernelNames); }

absl::StatusOr<ScanKernel> ParseScanKernel(std::string_view name) {
  return ParseName(name, kScanKernelNames, "scan kernel");
}

std::string_view SimdImplementationName() { return NameOf(kSimdImpl, kSimdImplNames); }

size_t FindNonZero(ScanKernel kernel, const uint8_t* data, size_t n) {
  return FindByte(kernel, data, n);
}

size_t FindNonZero(ScanKernel kernel, const int32_t* data, size_t n) {
  // The naive kernel compares whole int32s, as the 9.0 loop did. The others look
  // for a non-zero byte: an int32 is non-zero exactly when one of its bytes is.
  if (kernel == ScanKernel::kNaive) return NaiveFind(data, n);
  return FindByte(kernel, reinterpret_cast<const uint8_t*>(data), n * sizeof(int32_t)) /
         sizeof(int32_t);
}

uint64_t StreamingRead(const void* data, size_t n) {
  const auto* bytes = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (kSimdImpl == SimdImpl::kAvx2) return Avx2StreamingRead(bytes, n);
#endif
  return WordStreamingRead(bytes, n);
}

}  // namespace backendlab::buffers
