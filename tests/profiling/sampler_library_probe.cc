// A program for the sampler library's tests, run with the library
// LD_PRELOADed. Built without sanitizers and without the project's libraries
// (an ASan program must load the ASan runtime before anything preloaded):
// it copies /proc/self/maps to argv[1], blocks every signal it can (as
// PostgreSQL's postmaster does outside its select), burns argv[3] ms of CPU,
// then forks argv[2] children that burn as much each, and waits for them.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace {

long long CpuNowNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

}  // namespace

// The function the samples should name: extern "C" and not inlined, so its
// symbol is what the probe's .symtab says.
extern "C" __attribute__((noinline)) void ProbeBurnCpu(long long ns) {
  volatile unsigned long long sum = 0;
  const long long end = CpuNowNs() + ns;
  while (CpuNowNs() < end) {
    for (int i = 0; i < 10'000; ++i) sum = sum + static_cast<unsigned long long>(i);
  }
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MAPS_OUT CHILDREN CPU_MS\n", argv[0]);
    return 2;
  }
  FILE* in = fopen("/proc/self/maps", "r");
  FILE* out = fopen(argv[1], "w");
  if (in == nullptr || out == nullptr) return 1;
  for (int c; (c = fgetc(in)) != EOF;) fputc(c, out);
  fclose(in);
  fclose(out);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  const long long ns = atoll(argv[3]) * 1'000'000LL;
  ProbeBurnCpu(ns);
  const int children = atoi(argv[2]);
  for (int i = 0; i < children; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      ProbeBurnCpu(ns);
      _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}
