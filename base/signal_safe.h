// For code that may call only async-signal-safe functions: a signal
// handler, or a forked child between fork and exec. Header-only and free of
// any library, so the sampler library (a shared object loaded into another
// program) can use it too.
#ifndef BACKENDLAB_BASE_SIGNAL_SAFE_H_
#define BACKENDLAB_BASE_SIGNAL_SAFE_H_

#include <cstddef>
#include <cstdint>

namespace backendlab {

// Room FormatDecimal needs: 19 digits, a sign and the NUL.
inline constexpr size_t kDecimalBytes = 21;

// Writes `value` in decimal into `out` (at least kDecimalBytes bytes),
// NUL-terminated; returns the number of characters written before the NUL.
inline size_t FormatDecimal(int64_t value, char* out) {
  char digits[kDecimalBytes];
  size_t n = 0;
  // Negated as unsigned, so that INT64_MIN has a magnitude too.
  uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  do {
    digits[n++] = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  size_t length = 0;
  if (value < 0) out[length++] = '-';
  while (n > 0) out[length++] = digits[--n];
  out[length] = '\0';
  return length;
}

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_SIGNAL_SAFE_H_
