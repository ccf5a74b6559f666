// The process-wide stop request and its signal handlers.
#include "base/interrupt.h"

#include <signal.h>

#include <atomic>

namespace backendlab {
namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "read and written from a signal handler");

void OnStopSignal(int signal) {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, signal);  // the first one wins
}

void SetAll(void (*handler)(int), int flags) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  for (int s : kStopSignals) sigaction(s, &sa, nullptr);
}

}  // namespace

void InstallStopHandlers() { SetAll(OnStopSignal, 0); }  // no SA_RESTART: blocking calls see EINTR

int StopSignal() { return g_stop_signal.load(std::memory_order_relaxed); }

void RequestStop(int signal) { OnStopSignal(signal); }

void ResetStopRequestForTesting() { g_stop_signal.store(0); }

void IgnoreStopSignals() { SetAll(SIG_IGN, 0); }

void DefaultStopSignals() { SetAll(SIG_DFL, 0); }

}  // namespace backendlab
