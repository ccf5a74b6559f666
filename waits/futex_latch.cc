// `futex`: FUTEX_WAIT on is_set, FUTEX_WAKE for a maybe-sleeping owner.
#include "waits/futex_latch.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <new>

#include "base/resource_usage.h"
#include "waits/internal/my_pid.h"

namespace backendlab::waits {
namespace {

static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t),
              "the futex word is is_set itself: the atomic must be a bare 32-bit integer");

long Futex(std::atomic<int32_t>* word, int op, int32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<int32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

absl::Status FutexLatch::InitShared(Shared& shared) {
  new (&shared) Shared();
  return absl::OkStatus();
}

absl::StatusOr<FutexLatch> FutexLatch::Own(Shared& shared, int) {
  FutexLatch latch;
  latch.state_ = &shared.state;
  shared.state.owner_pid.store(internal::MyProcPid(), std::memory_order_release);
  return latch;
}

FutexLatch& FutexLatch::operator=(FutexLatch&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) state_->owner_pid.store(0, std::memory_order_release);
    state_ = std::exchange(other.state_, nullptr);
  }
  return *this;
}

FutexLatch::~FutexLatch() {
  if (state_ != nullptr) state_->owner_pid.store(0, std::memory_order_release);
}

void FutexLatch::Set(Shared& shared) noexcept {
  LatchState& s = shared.state;
  FullBarrier();
  if (s.is_set.load(std::memory_order_relaxed) != 0) return;
  s.is_set.store(1, std::memory_order_relaxed);
  FullBarrier();
  if (s.maybe_sleeping.load(std::memory_order_relaxed) == 0) return;
  Futex(&s.is_set, FUTEX_WAKE, INT_MAX, nullptr);
}

void FutexLatch::Reset() noexcept {
  state_->is_set.store(0, std::memory_order_relaxed);
  FullBarrier();
}

uint32_t FutexLatch::Wait(int64_t timeout_ms) {
  const int64_t start_ns = timeout_ms >= 0 ? NowNs() : 0;
  for (;;) {
    if (state_->is_set.load(std::memory_order_relaxed) != 0) return kLatchSet;
    state_->maybe_sleeping.store(1, std::memory_order_relaxed);
    FullBarrier();
    if (state_->is_set.load(std::memory_order_relaxed) != 0) {
      state_->maybe_sleeping.store(0, std::memory_order_relaxed);
      return kLatchSet;
    }
    timespec left{};
    if (timeout_ms >= 0) {
      const int64_t left_ns = timeout_ms * 1'000'000 - (NowNs() - start_ns);
      if (left_ns <= 0) {
        state_->maybe_sleeping.store(0, std::memory_order_relaxed);
        return kTimeout;
      }
      left.tv_sec = left_ns / 1'000'000'000;
      left.tv_nsec = left_ns % 1'000'000'000;
    }
    // FUTEX_WAIT's timeout is relative. EAGAIN: is_set was no longer 0 when
    // the kernel looked; EINTR: a signal; both go round to the check.
    const long rc = Futex(&state_->is_set, FUTEX_WAIT, 0, timeout_ms >= 0 ? &left : nullptr);
    state_->maybe_sleeping.store(0, std::memory_order_relaxed);
    if (rc != 0 && errno != EAGAIN && errno != EINTR && errno != ETIMEDOUT) return kWaitFailed;
  }
}

}  // namespace backendlab::waits
