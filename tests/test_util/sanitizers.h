// Whether this test binary is built with AddressSanitizer: its shadow memory
// adds page faults beside a test's own and its checks slow every call.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_SANITIZERS_H_
#define BACKENDLAB_TESTS_TEST_UTIL_SANITIZERS_H_

namespace backendlab::test_util {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_SANITIZERS_H_
