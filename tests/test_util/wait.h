// Waiting in a test for something that must happen: on the event, with a
// limit generous enough for an ASan build on a loaded 2-core machine, never
// a fixed sleep that a slow machine can outrun.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_WAIT_H_
#define BACKENDLAB_TESTS_TEST_UTIL_WAIT_H_

#include <chrono>
#include <thread>

namespace backendlab::test_util {

// What a test waits at most for what must come (a server started, a process
// gone): it returns as soon as it comes, so only a failing test waits this long.
inline constexpr std::chrono::seconds kPatience{120};

// Polls `done` every `poll` until it is true (true) or `limit` passes (false).
template <typename Done>
bool WaitUntil(Done done, std::chrono::milliseconds limit = kPatience,
               std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_WAIT_H_
