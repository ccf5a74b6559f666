// `semaphore`: a process-shared POSIX semaphore as the wake-up.
#include "waits/semaphore_latch.h"

#include <time.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "waits/internal/my_pid.h"

namespace backendlab::waits {

absl::Status SemaphoreLatch::InitShared(Shared& shared) {
  new (&shared.state) LatchState();
  if (sem_init(&shared.semaphore, /*pshared=*/1, 0) != 0) {
    return absl::UnavailableError(absl::StrCat("sem_init: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void SemaphoreLatch::DestroyShared(Shared& shared) noexcept { sem_destroy(&shared.semaphore); }

absl::StatusOr<SemaphoreLatch> SemaphoreLatch::Own(Shared& shared, int) {
  SemaphoreLatch latch;
  latch.shared_ = &shared;
  shared.state.owner_pid.store(internal::MyProcPid(), std::memory_order_release);
  return latch;
}

SemaphoreLatch& SemaphoreLatch::operator=(SemaphoreLatch&& other) noexcept {
  if (this != &other) {
    if (shared_ != nullptr) shared_->state.owner_pid.store(0, std::memory_order_release);
    shared_ = std::exchange(other.shared_, nullptr);
  }
  return *this;
}

SemaphoreLatch::~SemaphoreLatch() {
  if (shared_ != nullptr) shared_->state.owner_pid.store(0, std::memory_order_release);
}

void SemaphoreLatch::Set(Shared& shared) noexcept {
  FullBarrier();
  if (shared.state.is_set.load(std::memory_order_relaxed) != 0) return;
  shared.state.is_set.store(1, std::memory_order_relaxed);
  sem_post(&shared.semaphore);
}

void SemaphoreLatch::Reset() noexcept {
  shared_->state.is_set.store(0, std::memory_order_relaxed);
  FullBarrier();
}

uint32_t SemaphoreLatch::Wait(int64_t timeout_ms) {
  timespec deadline{};
  if (timeout_ms >= 0) {
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1'000'000;
    if (deadline.tv_nsec >= 1'000'000'000) {
      deadline.tv_sec += 1;
      deadline.tv_nsec -= 1'000'000'000;
    }
  }
  for (;;) {
    if (shared_->state.is_set.load(std::memory_order_acquire) != 0) return kLatchSet;
    const int rc = timeout_ms >= 0 ? sem_clockwait(&shared_->semaphore, CLOCK_MONOTONIC, &deadline)
                                   : sem_wait(&shared_->semaphore);
    if (rc == 0 || errno == EINTR) continue;  // posted, or a signal: the check above decides
    if (errno == ETIMEDOUT) return shared_->state.is_set.load(std::memory_order_acquire) != 0 ? uint32_t{kLatchSet} : uint32_t{kTimeout};
    return kWaitFailed;
  }
}

}  // namespace backendlab::waits
