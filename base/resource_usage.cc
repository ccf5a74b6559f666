// getrusage/clock_gettime readings and a description of the machine.
#include "base/resource_usage.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <string_view>

namespace backendlab {
namespace {


int64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int64_t NowNs() { return ClockNs(CLOCK_MONOTONIC); }

namespace {

ResourceSample Sample(int who, clockid_t cpu_clock) {
  rusage usage;
  getrusage(who, &usage);
  ResourceSample sample;
  sample.wall_ns = NowNs();
  // The CPU clocks have nanosecond resolution; ru_utime/ru_stime tick coarsely.
  sample.cpu_ns = ClockNs(cpu_clock);
  sample.minor_faults = usage.ru_minflt;
  sample.major_faults = usage.ru_majflt;
  return sample;
}

}  // namespace

ResourceSample SampleSelf() { return Sample(RUSAGE_SELF, CLOCK_PROCESS_CPUTIME_ID); }
ResourceSample SampleThread() { return Sample(RUSAGE_THREAD, CLOCK_THREAD_CPUTIME_ID); }

ResourceSample operator-(const ResourceSample& after, const ResourceSample& before) {
  return {after.wall_ns - before.wall_ns, after.cpu_ns - before.cpu_ns,
          after.minor_faults - before.minor_faults, after.major_faults - before.major_faults};
}

MachineInfo DescribeMachine() {
  MachineInfo info;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      if (size_t colon = line.find(':'); colon != std::string::npos) {
        info.cpu_model = line.substr(colon + 1);
        info.cpu_model.erase(0, info.cpu_model.find_first_not_of(' '));
      }
      break;
    }
  }
  info.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  utsname uts;
  if (uname(&uts) == 0) info.kernel = std::string(uts.sysname) + " " + uts.release;
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(thp, modes);
  if (size_t open = modes.find('['), close = modes.find(']'); open != std::string::npos && close > open) {
    info.transparent_hugepages = modes.substr(open + 1, close - open - 1);
  }
  return info;
}

}  // namespace backendlab
