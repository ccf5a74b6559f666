// A stop asked for from outside: ^C (SIGINT), a closed terminal (SIGHUP),
// the quit key (SIGQUIT) or `kill`/`timeout` (SIGTERM). Every long loop of the process
// polls StopSignal() and ends cleanly — children reaped, files removed — and
// the command exits with 128 + the signal, as a shell expects.
#ifndef BACKENDLAB_BASE_INTERRUPT_H_
#define BACKENDLAB_BASE_INTERRUPT_H_

#include <csignal>

namespace backendlab {

// The signals that ask for a stop, in the order their names are listed.
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Installs handlers for kStopSignals that record the first one received.
// Without SA_RESTART, so a blocking poll()/read()/waitpid() returns EINTR
// and its loop sees the request at once. Idempotent. The request is never
// reset by the process: once asked, every loop of every later configuration
// of the same command ends too (a matrix must not run on after ^C).
void InstallStopHandlers();

// 0 while no stop was asked for; otherwise the first signal that asked.
// Safe to call from a signal handler.
int StopSignal();
inline bool StopRequested() { return StopSignal() != 0; }

// The exit status for a command stopped by `signal`: 128 + signal.
inline int StopExitCode(int signal) { return 128 + signal; }

// Sets the request as if `signal` had arrived (a test seam, and the way a
// module turns an observed stop of its own into the process's).
void RequestStop(int signal);

// Forgets a request: for tests that run several commands in one process.
void ResetStopRequestForTesting();

// In a forked child that must not stop on its own (a postmaster that the tool
// stops through a pipe; it also gets the process group's signals): ignore
// kStopSignals. A later exec() keeps them ignored, so use it only where that
// is wanted.
void IgnoreStopSignals();

// In a forked child that should die of them as usual (a backend): default
// dispositions for kStopSignals.
void DefaultStopSignals();

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_INTERRUPT_H_
