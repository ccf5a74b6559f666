// `backendlab profile`: where one configuration's backends spend their time,
// as call graphs. The built-in sampler follows every forked backend and tags
// each sample with its phase; with --perf=on the same workload also runs under
// `perf record`, and both are folded, drawn and ranked the same way.
#include "tools/profile_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/compiler.h"
#include "lifecycle/cycle.h"
#include "lifecycle/cycle_summary.h"
#include "profiling/flame_graph.h"
#include "profiling/folded_stacks.h"
#include "profiling/perf_events.h"
#include "profiling/perf_script.h"
#include "profiling/sampler.h"
#include "profiling/symbolizer.h"
#include "tools/cycle_command.h"
#include "tools/cycle_flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kProfileFlags[] = {
    {"frequency", "1000", "samples per second of the sampled clock, 1..100000"},
    {"clock", "cpu", "cpu: CPU time (where CPU goes); wall: wall-clock time, blocked time included"},
    {"unwinder", "auto", "fp (frame pointers: cheap; the profile preset), libunwind (DWARF: any build, slower), or auto: fp in a frame-pointer build"},
    {"out", "backendlab-profile", "directory for the folded stacks, flame graphs and summary (created)"},
    {"top", "15", "functions in the top-N tables"},
    {"perf", "off", "on (or --perf alone): also run the workload under perf record -e cpu-clock --call-graph=fp, side by side"},
};

std::vector<FlagSpec> AllFlags() {
  std::vector<FlagSpec> all(CycleFlagSpecs().begin(), CycleFlagSpecs().end());
  all.insert(all.end(), std::begin(kProfileFlags), std::end(kProfileFlags));
  return all;
}

// Whether `arg` is one of profile's own flags (--name=value, or an on/off
// flag alone), which `cycle` under perf must not be given.
bool IsProfileFlag(std::string_view arg) {
  for (const FlagSpec& f : kProfileFlags) {
    const std::string flag = absl::StrCat("--", std::string(f.name));
    if (arg == flag || arg.starts_with(flag + "=")) return true;
  }
  return false;
}

// A backend phase (or wait): the tags a backend's samples carry. The
// postmaster's fork() calls carry `fork` too: they are that phase's start.
bool IsPhaseTag(int32_t tag) { return tag >= 0 && tag <= lifecycle::kSampleTagWait; }

// The process a sample comes from, named as perf names it (by comm).
std::string RoleOf(const profiling::RawSample& s, int32_t postmaster_pid) {
  if (s.pid == postmaster_pid) return "postmaster";
  if (s.tag == lifecycle::kSampleTagClient) return "client";  // inproc: the tool itself
  return "backend";
}

absl::Status WriteProfile(const std::string& dir, const std::string& name, const profiling::FoldedStacks& stacks,
                          const std::string& title, std::vector<std::string>& written) {
  const std::string folded = absl::StrCat(dir, "/", name, ".folded");
  if (absl::Status s = WriteTextFile(folded, stacks.ToText()); !s.ok()) return s;
  written.push_back(folded);
  profiling::FlameGraphOptions options;
  options.title = title;
  const std::string svg = absl::StrCat(dir, "/", name, ".svg");
  if (absl::Status s = WriteTextFile(svg, profiling::RenderFlameGraphSvg(stacks, options)); !s.ok()) return s;
  written.push_back(svg);
  return absl::OkStatus();
}

std::string Percent(double part, double whole) { return whole > 0 ? absl::StrFormat("%.1f", 100.0 * part / whole) : "-"; }

void PrintTopN(std::ostream& out, const std::vector<profiling::FunctionSamples>& top) {
  out << absl::StrFormat("%6s %7s %7s %7s  %s\n", "self%", "total%", "self", "total", "function");
  for (const profiling::FunctionSamples& f : top) {
    out << absl::StrFormat("%6.1f %7.1f %7d %7d  %s\n", f.self_percent, f.total_percent, f.self, f.total, f.name);
  }
}

// Per tag (the phases, then wait): the samples taken, and the time the
// phase counters measured on one clock (CPU time, or wall time, where the
// backends' wait for "terminate" counts too). Reap is the kernel's, after
// _exit: never sampled, left out of both.
struct PhaseTally {
  std::array<int64_t, lifecycle::kSampleTagWait + 1> samples{};
  int64_t tagged = 0;  // samples with a phase or wait tag
  std::array<double, lifecycle::kSampleTagWait + 1> ms{};
  double total_ms = 0;
};

PhaseTally Tally(const lifecycle::CycleResult& result, profiling::SampleClock clock) {
  const bool wall = clock == profiling::SampleClock::kWall;
  PhaseTally t;
  for (const profiling::RawSample& s : result.samples) {
    if (!IsPhaseTag(s.tag)) continue;
    ++t.samples[static_cast<size_t>(s.tag)];
    ++t.tagged;
  }
  auto add = [&](int32_t tag, int64_t ns) {
    t.ms[static_cast<size_t>(tag)] += static_cast<double>(ns) / 1e6;
    t.total_ms += static_cast<double>(ns) / 1e6;
  };
  for (lifecycle::Phase p : lifecycle::kAllPhases) {
    if (p == lifecycle::Phase::kReap) continue;
    const lifecycle::PhaseHistograms& h = result.backends.phases[static_cast<int>(p)];
    add(static_cast<int32_t>(p), wall ? h.wall_ns.sum() : h.cpu_ns.sum());
  }
  if (wall) add(lifecycle::kSampleTagWait, result.backends.wait_ns.sum());
  return t;
}

// Per phase: the share of the samples, beside the share of the sampled clock
// the phase counters measured, so that a reader can see whether they agree.
void PrintPhaseShares(std::ostream& out, const PhaseTally& t, profiling::SampleClock clock) {
  const bool wall = clock == profiling::SampleClock::kWall;
  const char* unit = wall ? "wall" : "cpu";
  out << absl::StrFormat("%-14s %9s %10s   %13s %7s\n", "phase", "samples", "% samples", absl::StrCat(unit, " ms (ctr)"),
                         absl::StrCat("% ", unit));
  for (int32_t tag = 0; tag <= lifecycle::kSampleTagWait; ++tag) {
    const bool measured = tag != static_cast<int32_t>(lifecycle::Phase::kReap) && (tag < lifecycle::kNumPhases || wall);
    const size_t i = static_cast<size_t>(tag);
    out << absl::StrFormat("%-14s %9d %10s   %13s %7s\n", lifecycle::SampleTagName(tag), t.samples[i],
                           Percent(static_cast<double>(t.samples[i]), static_cast<double>(t.tagged)),
                           measured ? absl::StrFormat("%.1f", t.ms[i]) : "-", measured ? Percent(t.ms[i], t.total_ms) : "-");
  }
}

absl::StatusOr<std::string> FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate = absl::StrCat(std::string(dir), "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(program, " not found in PATH"));
}

// Runs argv with stdout into `stdout_path` (or captured into *captured when
// the path is empty); stderr passes through. The exit status, or -1.
int RunProgram(const std::vector<std::string>& argv, const std::string& stdout_path, std::string* captured) {
  int pipe_fds[2] = {-1, -1};
  if (stdout_path.empty() && pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = stdout_path.empty() ? pipe_fds[1] : open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(127);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "backendlab profile: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  if (pipe_fds[1] >= 0) close(pipe_fds[1]);
  if (pid > 0 && pipe_fds[0] >= 0) {
    std::array<char, 65536> buf;
    ssize_t n;
    while ((n = read(pipe_fds[0], buf.data(), buf.size())) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      captured->append(buf.data(), static_cast<size_t>(n));
    }
  }
  if (pipe_fds[0] >= 0) close(pipe_fds[0]);
  if (pid < 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct PerfRun {
  profiling::FoldedStacks all;       // roots: process names (backend, postmaster, backendlab)
  profiling::FoldedStacks backends;  // the backends' stacks, no root
};

// The same workload (`cycle` with the same flags) under perf record, its
// samples folded like the sampler's: kernel frames dropped (kernel time is
// charged to the user frame that entered the kernel) and short names.
absl::StatusOr<PerfRun> RunUnderPerf(std::span<const std::string> args, const std::string& dir, int frequency_hz,
                                     const std::function<void(const std::string&)>& say) {
  absl::StatusOr<std::string> perf = FindInPath("perf");
  if (!perf.ok()) {
    return absl::FailedPreconditionError(
        "--perf: perf is not installed (Debian: apt-get install linux-perf); the built-in profile above stands");
  }
  std::array<char, 4096> self{};
  if (readlink("/proc/self/exe", self.data(), self.size() - 1) <= 0) {
    return absl::UnavailableError(absl::StrCat("readlink /proc/self/exe: ", std::strerror(errno)));
  }
  const std::string data = dir + "/perf.data";
  std::vector<std::string> argv = {*perf, "record", "-q", "-e", "cpu-clock", "-F", absl::StrCat(frequency_hz),
                                   "--call-graph=fp", "-o", data, "--", self.data(), "cycle"};
  for (const std::string& a : args) {
    if (!IsProfileFlag(a) && !a.starts_with("--json=") && !a.starts_with("--csv=")) argv.push_back(a);
  }
  if (!kFramePointers) {
    say("note: this binary was not built with frame pointers; perf's call graphs will stop early.\n"
        "      Use the profile preset (tools/backendlab profile does).\n");
  }
  say(absl::StrCat("\nrunning the same workload under perf: ", absl::StrJoin(argv, " "), "\n"));
  const int status = RunProgram(argv, dir + "/perf-cycle.txt", nullptr);
  if (status != 0) {
    return absl::UnavailableError(absl::StrCat(
        "perf record failed (exit ", status, "; its message is above). If the kernel refused: as root, or with "
        "sysctl kernel.perf_event_paranoid=1 (now ", [] {
          const std::optional<int> level = profiling::PerfEventParanoid();
          return level ? absl::StrCat(*level) : std::string("unknown");
        }(), "); the cycle's own output is in ", dir, "/perf-cycle.txt"));
  }
  std::string script;
  const int script_status =
      RunProgram({*perf, "script", "-i", data, "-F", "comm,pid,tid,time,event,ip,sym,dso"}, "", &script);
  if (script_status != 0) return absl::UnavailableError(absl::StrCat("perf script failed (exit ", script_status, ")"));
  profiling::PerfScriptOptions options;
  options.drop_kernel_frames = true;
  options.short_names = true;
  absl::StatusOr<profiling::FoldedStacks> folded = profiling::ParsePerfScript(script, options);
  if (!folded.ok()) return folded.status();
  PerfRun run;
  run.all = *std::move(folded);
  run.backends = run.all.Under("backend");
  return run;
}

// A name for comparing the two profiles: libc's aliases differ only by
// leading underscores (the symbolizer may say munmap where perf says
// __munmap, for the same address).
std::string_view ComparableName(std::string_view name) {
  while (name.starts_with('_')) name.remove_prefix(1);
  return name;
}

// How many of the first n names of a are among the first n of b.
int CommonTop(const std::vector<profiling::FunctionSamples>& a, const std::vector<profiling::FunctionSamples>& b, size_t n) {
  int common = 0;
  for (size_t i = 0; i < a.size() && i < n; ++i) {
    for (size_t j = 0; j < b.size() && j < n; ++j) common += ComparableName(a[i].name) == ComparableName(b[j].name);
  }
  return common;
}

}  // namespace

std::string ProfileUsage() {
  return absl::StrCat(
      "usage: backendlab profile [cycle flags] [profile flags]\n"
      "Runs `cycle` with a sampling profiler that follows every forked backend and tags each\n"
      "sample with the backend's phase; writes folded stacks (all, per phase), SVG flame graphs\n"
      "and a summary, and prints the top functions. --perf=on also runs the workload under\n"
      "perf record and prints both rankings side by side.\n\n",
      FlagsHelp(AllFlags()));
}

absl::Status RunProfileCommand(std::span<const std::string> args, std::ostream& out) {
  const std::vector<FlagSpec> specs = AllFlags();
  absl::StatusOr<Flags> flags = Flags::Parse(args, specs);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<lifecycle::CycleOptions> options = CycleOptionsFromFlags(*flags);
  if (!options.ok()) return options.status();
  profiling::SamplerOptions sampler;
  absl::StatusOr<int64_t> frequency = flags->GetInt("frequency", 1, 100'000);
  if (!frequency.ok()) return frequency.status();
  sampler.frequency_hz = static_cast<int>(*frequency);
  if (flags->Has("clock")) {
    absl::StatusOr<profiling::SampleClock> clock = profiling::ParseSampleClock(flags->Get("clock"));
    if (!clock.ok()) return clock.status();
    sampler.clock = *clock;
  }
  sampler.unwinder = kFramePointers ? profiling::Unwinder::kFramePointers : profiling::Unwinder::kLibunwind;
  if (flags->Has("unwinder") && flags->Get("unwinder") != "auto") {
    absl::StatusOr<profiling::Unwinder> unwinder = profiling::ParseUnwinder(flags->Get("unwinder"));
    if (!unwinder.ok()) return unwinder.status();
    sampler.unwinder = *unwinder;
  }
  absl::StatusOr<int64_t> top_n = flags->GetInt("top", 1, 1000);
  if (!top_n.ok()) return top_n.status();
  const std::string perf_flag = flags->Get("perf");
  if (perf_flag != "on" && perf_flag != "off") return absl::InvalidArgumentError("--perf must be on or off");
  const std::string dir = flags->Get("out");  // never empty: the parser refuses empty values
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  // Found out now, not after the run: an --out that is a file or not writable.
  if (absl::Status s = WriteTextFile(dir + "/summary.txt", ""); !s.ok()) return s;
  options->sampler = sampler;
  if (isatty(STDERR_FILENO)) {
    options->progress = [](const std::string& line) { std::fprintf(stderr, "\r%s\033[K", line.c_str()); };
  }

  absl::StatusOr<lifecycle::CycleResult> result = lifecycle::RunCycle(*options);
  if (options->progress) std::fprintf(stderr, "\r\033[K");
  if (!result.ok()) return result.status();
  const lifecycle::CycleSummary summary = lifecycle::Summarize(*result);

  // Everything printed also goes to summary.txt.
  std::ostringstream text;
  std::string printed;
  auto flush = [&] {
    out << text.str() << std::flush;
    printed += text.str();
    text.str("");
  };
  text << "backendlab profile: " << ConfigLine(*options) << "\n" << MachineLine(MachineHeader()) << "\n";
  std::set<int32_t> pids;
  for (const profiling::RawSample& s : result->samples) pids.insert(s.pid);
  const PhaseTally on_cpu = Tally(*result, profiling::SampleClock::kCpu);
  const double backend_cpu_s = on_cpu.total_ms / 1e3;
  const int64_t phase_samples = on_cpu.tagged;
  text << absl::StrFormat(
      "sampler: %s clock, %d Hz requested, %s unwinding: %d samples from %d processes, %d dropped (buffer full), "
      "%d stacks cut at %d frames\n",
      profiling::SampleClockName(sampler.clock), sampler.frequency_hz, profiling::UnwinderName(sampler.unwinder),
      result->samples.size(), pids.size(), result->samples_dropped, result->samples_truncated, profiling::kMaxFrames);
  if (backend_cpu_s > 0) {
    text << absl::StrFormat("         %.0f samples per second of the backends' CPU time (phase counters: %.2f s)%s\n",
                            static_cast<double>(phase_samples) / backend_cpu_s, backend_cpu_s,
                            sampler.clock == profiling::SampleClock::kCpu
                                ? "; CPU-time timers fire at most once per kernel tick (CONFIG_HZ)"
                                : "");
  }
  if (!result->samples_status.ok()) text << "samples incomplete: " << result->samples_status.message() << "\n";
  text << absl::StrFormat("connections/s while sampled: %.1f (%d measured backends)\n\n", summary.connections_per_second,
                          result->connections);

  profiling::Symbolizer symbolizer;
  const int32_t postmaster = result->postmaster_pid;
  auto backend_only = [postmaster](const profiling::RawSample& s) { return IsPhaseTag(s.tag) && s.pid != postmaster; };
  auto role = [postmaster](const profiling::RawSample& s) { return std::vector<std::string>{RoleOf(s, postmaster)}; };
  std::vector<std::string> written;
  const profiling::FoldedStacks backends = profiling::FoldSamples(result->samples, symbolizer, {.keep = backend_only, .prefix = nullptr});
  // all: every process under its role, as perf's stacks are under their comm.
  const profiling::FoldedStacks all = profiling::FoldSamples(
      result->samples, symbolizer,
      {.keep = nullptr, .prefix = role});
  if (all.total_samples() > 0) {
    if (absl::Status s = WriteProfile(dir, "all", all, "backendlab: all processes", written); !s.ok()) return s;
  }
  const profiling::FoldedStacks phases = profiling::FoldSamples(
      result->samples, symbolizer,
      {.keep = [](const profiling::RawSample& s) { return IsPhaseTag(s.tag); },
       .prefix = [postmaster](const profiling::RawSample& s) {
         return std::vector<std::string>{RoleOf(s, postmaster), absl::StrCat("[", lifecycle::SampleTagName(s.tag), "]")};
       }});
  if (phases.total_samples() > 0) {
    if (absl::Status s = WriteProfile(dir, "phases", phases, "backendlab: backends by phase", written); !s.ok()) return s;
  }
  for (int32_t tag = 0; tag <= lifecycle::kSampleTagWait; ++tag) {
    const profiling::FoldedStacks one = profiling::FoldSamples(
        result->samples, symbolizer,
        {.keep = [tag](const profiling::RawSample& s) { return s.tag == tag; }, .prefix = role});
    if (one.total_samples() == 0) continue;
    const std::string name = lifecycle::SampleTagName(tag);
    if (absl::Status s = WriteProfile(dir, "phase-" + name, one, "backendlab: backends in " + name, written); !s.ok()) {
      return s;
    }
  }

  PhaseReport(summary, options->backend.counters).PrintText(text);
  for (const absl::Status& why : result->counters_unavailable) text << why.message() << "\n";
  text << "\n";
  text << "samples by phase, beside the time each phase's counters measured on the sampled clock (fork includes the\n"
          "postmaster's fork(); reap, the kernel's teardown after _exit, is invisible to a user-space sampler):\n";
  PrintPhaseShares(text, sampler.clock == profiling::SampleClock::kCpu ? on_cpu : Tally(*result, sampler.clock),
                   sampler.clock);
  const std::vector<profiling::FunctionSamples> top = backends.TopN(static_cast<size_t>(*top_n));
  text << absl::StrFormat("\ntop %d functions of the backends, built-in sampler (%d samples; self: the leaf frame, "
                          "total: anywhere on the stack):\n",
                          *top_n, backends.total_samples());
  PrintTopN(text, top);
  if (backends.total_samples() == 0) {
    text << "(no backend samples: the backends ran for less CPU time than one sampling period; raise --connections"
            " or --frequency)\n";
  }

  absl::Status perf_status = absl::OkStatus();
  if (perf_flag == "on" && result->interrupted) {
    text << "\n--perf: not run (interrupted)\n";
  } else if (perf_flag == "on") {
    flush();
    absl::StatusOr<PerfRun> perf = RunUnderPerf(args, dir, sampler.frequency_hz, [&](const std::string& line) {
      text << line;
      flush();
    });
    if (perf.ok()) {
      if (absl::Status s = WriteProfile(dir, "perf", perf->all, "perf record -e cpu-clock --call-graph=fp", written);
          !s.ok()) {
        return s;
      }
      const std::vector<profiling::FunctionSamples> perf_top = perf->backends.TopN(static_cast<size_t>(*top_n));
      text << absl::StrFormat("\ntop %d functions of the backends, perf (%d samples, kernel frames folded into their "
                              "user-space caller):\n",
                              *top_n, perf->backends.total_samples());
      PrintTopN(text, perf_top);
      text << absl::StrFormat("\nagreement: %d of the top 5 functions by self samples are the same in both (perf may also\n"
                              "name functions of system libraries from their separate debug files; the sampler cannot)\n",
                              CommonTop(top, perf_top, 5));
    } else {
      perf_status = perf.status();
      text << "perf: " << perf_status.message() << "\n";
    }
  }

  text << "\nfiles:\n";
  for (const std::string& f : written) text << "  " << f << "\n";
  flush();
  if (absl::Status s = WriteTextFile(dir + "/summary.txt", printed); !s.ok()) return s;
  if (flags->Has("json") || flags->Has("csv")) {
    nlohmann::json header = MachineHeader();
    header["command"] = "profile";
    header["config"] = ConfigJson(*options);
    header["summary"] = SummaryJson(summary, *result);
    header["sampler"] = {{"clock", profiling::SampleClockName(sampler.clock)},
                         {"frequency_hz", sampler.frequency_hz},
                         {"unwinder", profiling::UnwinderName(sampler.unwinder)},
                         {"samples", result->samples.size()},
                         {"dropped", result->samples_dropped},
                         {"truncated", result->samples_truncated}};
    nlohmann::json top_json = nlohmann::json::array();
    for (const profiling::FunctionSamples& f : top) {
      top_json.push_back({{"function", f.name}, {"self", f.self}, {"total", f.total},
                          {"self_percent", f.self_percent}, {"total_percent", f.total_percent}});
    }
    header["top"] = top_json;
    Report report = PhaseReport(summary, options->backend.counters);
    report.SetHeader(header);
    if (absl::Status s = report.WriteFiles(flags->Get("json"), flags->Get("csv")); !s.ok()) return s;
  }
  if (absl::Status s = RunOutcome(*result, summary); !s.ok()) return s;
  if (!result->samples_status.ok()) return result->samples_status;
  return perf_status;
}

}  // namespace backendlab::tools
