// Where a real PostgreSQL backend's time goes: the one table that maps the
// functions on a sampled stack to the phase of a connection's life, per
// major version, and the classifier that applies it.
//
// What perf prints for Debian's PostgreSQL 15 (no debug symbols; DWARF
// unwinding from .eh_frame), seen on the development VM under pgbench -C -S:
//   - exported functions by name: PostmasterMain, fork_process,
//     InitPostmasterChild, PostgresMain, BaseInit, InitPostgres,
//     ClientAuthentication, proc_exit, ...;
//   - static ones as "[unknown]" (the parser names them "[postgres]", by
//     their object): ServerLoop (inlined), BackendStartup, BackendRun,
//     BackendInitialize, ProcessStartupPacket, reaper, CleanupBackend,
//     ReadCommand. So a backend's stack reads
//     main;PostmasterMain;[postgres];PostgresMain;InitPostgres;... and its
//     start-up packet work shows only as frames under PostmasterMain that
//     no other rule claims — hence the backend-only fallback rule on
//     PostmasterMain below;
//   - the postmaster's SIGCHLD handler (reaper) runs on top of __select,
//     behind two [unknown] signal frames: only its leaves are named
//     (__wait4, ReleasePostmasterChildSlot, __dcigettext for
//     CleanupBackend's _("server process")), so those carry the `reap` rules;
//   - kernel frames by name (copy_process, dup_mmap, do_exit, exit_mmap, ...).
// A build with symbols (--bindir of a developer's tree) names the static
// functions too; the rules for them are harmless where they never appear.
#ifndef BACKENDLAB_PGREAL_PHASE_RULES_H_
#define BACKENDLAB_PGREAL_PHASE_RULES_H_

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/names.h"

namespace backendlab::pgreal {

// The phases of a real connection's life, in the order reports list them.
// Beside the mock's (lifecycle/backend_record.h): `fork` and `work` mean the
// same; `init` holds what the mock splits into init_buffers and
// init_catcache, and much more; `exit` holds the mock's exit_check
// (AtProcExit_Buffers is one of shmem_exit's callbacks) and every other exit
// handler, PostgreSQL's and libc's, and so the mock's `teardown` (the
// backend's own frees); `kernel_exit` is the kernel's do_exit in the backend,
// which the mock counts in its `reap`; `reap` is the postmaster's side.
// `tls` and `scram` are a production connection's (TCP with TLS and a
// password): the TLS handshake, and the password exchange inside
// ClientAuthentication; a Unix-socket `trust` connection has neither.
// calibrate/phase_groups.h groups each with the mock's: a phase added here
// does not compile until it has its group there.
enum class RealPhase : int32_t {
  kAccept, kFork, kStartup, kTls, kAuth, kScram, kInit, kWork, kExit, kKernelExit, kReap, kPostmasterOther, kAux
};
inline constexpr NamedValue<RealPhase> kRealPhaseNames[] = {
    {RealPhase::kAccept, "accept"}, {RealPhase::kFork, "fork"},   {RealPhase::kStartup, "startup"},
    {RealPhase::kTls, "tls"},       {RealPhase::kAuth, "auth"},   {RealPhase::kScram, "scram"},
    {RealPhase::kInit, "init"},     {RealPhase::kWork, "work"},   {RealPhase::kExit, "exit"},
    {RealPhase::kKernelExit, "kernel_exit"},                      {RealPhase::kReap, "reap"},
    {RealPhase::kPostmasterOther, "postmaster_other"},            {RealPhase::kAux, "aux"},
};
inline constexpr auto kAllRealPhases = ValuesOf(kRealPhaseNames);
inline constexpr int kNumRealPhases = static_cast<int>(std::size(kAllRealPhases));
static_assert(kNumRealPhases == static_cast<int>(RealPhase::kAux) + 1 && InEnumOrder(kRealPhaseNames),
              "kRealPhaseNames lists every RealPhase once, in enum order: phases index arrays");
inline std::string_view RealPhaseName(RealPhase phase) { return NameOf(phase, kRealPhaseNames); }
// Not a phase: a sample no rule claims, always reported beside them.
inline constexpr std::string_view kUnclaimed = "unclaimed";
// A classification's word: its phase's name, or kUnclaimed.
inline std::string_view PhaseWord(std::optional<RealPhase> phase) { return phase ? RealPhaseName(*phase) : kUnclaimed; }

// Which processes a rule applies to. A sample's process role is
// "postmaster", "backend" or an auxiliary process's name (anything else).
enum class RuleScope { kAny, kPostmaster, kBackend, kAux };
std::string_view RuleScopeName(RuleScope scope);

// The process roles ProfileServer gives the root frame of a stack.
inline constexpr std::string_view kPostmasterRole = "postmaster";
inline constexpr std::string_view kBackendRole = "backend";
RuleScope ScopeOfRole(std::string_view role);

// function == kAnyFrame matches every sample of its scope that no frame rule
// claimed (used for auxiliary processes, whose internals are not phases of
// a connection).
inline constexpr std::string_view kAnyFrame = "*";

struct PhaseRule {
  std::string_view function;  // exact short name as perf prints it (kernel or user), or kAnyFrame
  RealPhase phase;
  RuleScope scope = RuleScope::kAny;
  int min_major = 0;   // first PostgreSQL major version it applies to
  int max_major = 99;  // last
  std::string_view why;
};

// The table, in order: where two rules name the same function for the same
// process and version, the first applies.
std::span<const PhaseRule> PhaseRules();

// The rules of one major version, indexed for classification.
class PhaseClassifier {
 public:
  explicit PhaseClassifier(int major);

  // The phase of one sample: the stack is scanned from the leaf toward the
  // root and the first frame that has a rule for this role's scope (or
  // kAny) decides — so proc_exit under PostgresMain is `exit`, a page fault
  // under InitPostgres is `init`. Then a kAnyFrame rule of the scope; else
  // none (kUnclaimed). `frames_root_first` without the role frame.
  std::optional<RealPhase> Classify(std::string_view role, std::span<const std::string> frames_root_first) const;

  int major() const { return major_; }

 private:
  struct Match {
    std::optional<RealPhase> phase[4];  // per RuleScope, none when no rule: kAny's rule folded into each
  };
  int major_;
  absl::flat_hash_map<std::string_view, Match> by_function_;
  Match any_frame_;
};

// The table for `major` (what --explain-phases prints): one line per rule
// that applies, with its scope and reason, and how a sample is classified.
void ExplainPhases(std::ostream& out, int major);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_PHASE_RULES_H_
