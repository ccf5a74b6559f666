// Scan kernels for the exit-time leak check of the `array` and `bytes` layouts:
// find the next non-zero count. The same answer from every kernel; only speed differs.
#ifndef BACKENDLAB_BUFFERS_SCAN_KERNELS_H_
#define BACKENDLAB_BUFFERS_SCAN_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "base/names.h"

namespace backendlab::buffers {

enum class ScanKernel {
  kNaive,  // one element per iteration, as PostgreSQL 9.0's AtProcExit_Buffers loop
  kWord,   // eight bytes per iteration, portable
  kSimd,   // AVX2 when the CPU has it (checked at run time), else SSE2 / word
};
inline constexpr NamedValue<ScanKernel> kScanKernelNames[] = {
    {ScanKernel::kNaive, "naive"}, {ScanKernel::kWord, "word"}, {ScanKernel::kSimd, "simd"}};
inline constexpr auto kAllScanKernels = ValuesOf(kScanKernelNames);

std::string_view ScanKernelName(ScanKernel kernel);
absl::StatusOr<ScanKernel> ParseScanKernel(std::string_view name);

// What kSimd runs on this machine: "avx2", "sse2" or "word" (detected once).
std::string_view SimdImplementationName();

// Index of the first non-zero element of data[0..n), or n if all are zero.
size_t FindNonZero(ScanKernel kernel, const int32_t* data, size_t n);
size_t FindNonZero(ScanKernel kernel, const uint8_t* data, size_t n);

// The streaming-read baseline: reads every byte of data[0..n) as fast as this
// machine can (the widest vectors it has, no early exit) and returns the OR of
// all 64-bit words so the reads cannot be optimised away. A scan kernel cannot
// beat it; the ratio says how much of the memory bandwidth a kernel uses.
uint64_t StreamingRead(const void* data, size_t n);

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_SCAN_KERNELS_H_
