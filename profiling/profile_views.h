// The views of one profiled run that `backendlab profile` draws and ranks:
// every process, the phases, each phase, and the measured processes' stacks
// for the top-N table. The labels (process roles, phase names) come from the
// caller, so this module knows nothing of what a phase is.
#ifndef BACKENDLAB_PROFILING_PROFILE_VIEWS_H_
#define BACKENDLAB_PROFILING_PROFILE_VIEWS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "profiling/folded_stacks.h"
#include "profiling/sampler.h"
#include "profiling/symbolizer.h"

namespace backendlab::profiling {

struct SampleLabels {
  // The root frame of a sample: the process it came from, named as perf's
  // comm names it ("backend", "postmaster", ...).
  std::function<std::string(const RawSample&)> process;
  // The phase a tag stands for, or "" for a tag that is no phase.
  std::function<std::string(int32_t tag)> phase;
  std::vector<int32_t> phase_tags;  // every phase's tag, in order
  std::string measured = "backend";  // the process whose stacks are ranked
};

// A folded profile and the flame graph title it is drawn with.
struct ProfileView {
  std::string name;  // the file name without extension: all, phases, phase-NAME
  std::string title;
  FoldedStacks stacks;
};

struct ProfileViews {
  // Those with samples, in this order: "all" (every sample under its
  // process), "phases" (samples in a phase, under their process and
  // "[phase]"), then "phase-NAME" for each phase (under their process).
  std::vector<ProfileView> views;
  // The measured processes' samples taken in a phase, without a root frame:
  // what the top-N table ranks, and what compares with perf's stacks under
  // the same comm.
  FoldedStacks measured;
  // Every sample under its process and, if taken in a phase, "[phase]":
  // what the exports (profiling/exports.h) read.
  FoldedStacks labeled;
};

ProfileViews FoldViews(std::span<const RawSample> samples, FrameSymbolizer& symbolizer, const SampleLabels& labels);

// The top-N table: "self% total% self total function", one line per function.
void PrintTopN(std::ostream& out, const std::vector<FunctionSamples>& top);

// How many of the first n functions of `a` are among the first n of `b`,
// comparing names without leading underscores: libc's aliases differ only by
// them (the symbolizer may say munmap where perf says __munmap, for the same
// address).
int CommonTop(const std::vector<FunctionSamples>& a, const std::vector<FunctionSamples>& b, size_t n);

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_PROFILE_VIEWS_H_
