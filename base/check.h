// Invariant checks that abort with file:line, shared by every module.
#ifndef BACKENDLAB_BASE_CHECK_H_
#define BACKENDLAB_BASE_CHECK_H_

#include <cstdio>
#include <cstdlib>

// BACKENDLAB_CHECK(cond): a broken invariant is a bug in backendlab, not bad
// input; it stops the process at once, naming the place. Always compiled in.
#define BACKENDLAB_CHECK(cond)                                                  \
  do {                                                                          \
    if (__builtin_expect(!(cond), 0)) {                                         \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,     \
                   #cond);                                                      \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

// BACKENDLAB_ASSERT(cond): a check too expensive for a release build, compiled
// in only with BACKENDLAB_USE_ASSERT_CHECKING (PostgreSQL's USE_ASSERT_CHECKING).
#ifdef BACKENDLAB_USE_ASSERT_CHECKING
#define BACKENDLAB_ASSERT(cond) BACKENDLAB_CHECK(cond)
#else
#define BACKENDLAB_ASSERT(cond) ((void)0)
#endif

namespace backendlab {

// True in builds that compile in assert-only checks.
inline constexpr bool kAssertChecking =
#ifdef BACKENDLAB_USE_ASSERT_CHECKING
    true;
#else
    false;
#endif

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_CHECK_H_
