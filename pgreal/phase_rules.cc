// The phase rule table for real PostgreSQL stacks, and its classifier.
#include "pgreal/phase_rules.h"

#include "absl/strings/str_format.h"

namespace backendlab::pgreal {
namespace {

using S = RuleScope;
using P = RealPhase;

// Names checked in postgres/postgres (postmaster.c, launch_backend.c,
// backend_startup.c, postgres.c, postinit.c, ipc.c, pmsignal.c) and against
// perf stacks of Debian's 15; glibc's and the kernel's as perf prints them.
constexpr PhaseRule kRules[] = {
    // --- the postmaster accepts the connection
    {"StreamConnection", P::kAccept, S::kPostmaster, 0, 16, "accept() of the new connection (pqcomm.c, <= 16)"},
    {"AcceptConnection", P::kAccept, S::kPostmaster, 17, 99, "accept() of the new connection (pqcomm.c, 17+)"},
    {"accept", P::kAccept, S::kPostmaster, 0, 99, "libc accept"},
    {"__libc_accept", P::kAccept, S::kPostmaster, 0, 99, "libc accept"},
    {"accept4", P::kAccept, S::kPostmaster, 0, 99, "libc accept4"},
    {"__sys_accept4", P::kAccept, S::kPostmaster, 0, 99, "kernel accept"},
    // --- fork: the postmaster's fork() and the child's part of fork_process
    {"fork_process", P::kFork, S::kAny, 0, 99, "fork(); in the child also its post-fork set-up (RAND_poll, ...)"},
    {"postmaster_child_launch", P::kFork, S::kAny, 17, 99, "17+: BackendStartup's fork (launch_backend.c)"},
    {"BackendStartup", P::kFork, S::kPostmaster, 0, 99, "static: named only in builds with symbols"},
    {"AssignPostmasterChildSlot", P::kFork, S::kPostmaster, 0, 99, "BackendStartup's child slot"},
    {"pg_strong_random", P::kFork, S::kPostmaster, 0, 99,
     "BackendStartup's cancel key (the postmaster's only per-connection random)"},
    {"ret_from_fork", P::kFork, S::kAny, 0, 99, "kernel: the child's first return to user space"},
    {"ret_from_fork_asm", P::kFork, S::kAny, 0, 99, "kernel"},
    {"schedule_tail", P::kFork, S::kAny, 0, 99, "kernel: the child's first schedule"},
    {"copy_process", P::kFork, S::kAny, 0, 99, "kernel: fork's copy of the process"},
    {"dup_mm", P::kFork, S::kAny, 0, 99, "kernel"},
    {"dup_mmap", P::kFork, S::kAny, 0, 99, "kernel"},
    {"copy_page_range", P::kFork, S::kAny, 0, 99, "kernel"},
    {"kernel_clone", P::kFork, S::kAny, 0, 99, "kernel"},
    {"_Fork", P::kFork, S::kAny, 0, 99, "libc fork"},
    {"__libc_fork", P::kFork, S::kAny, 0, 99, "libc fork"},
    // --- startup: the new backend reads its start-up packet
    {"InitPostmasterChild", P::kStartup, S::kAny, 0, 99, "the child detaches from the postmaster"},
    {"ClosePostmasterPorts", P::kStartup, S::kAny, 0, 99, ""},
    {"BackendInitialize", P::kStartup, S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"ProcessStartupPacket", P::kStartup, S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"pq_init", P::kStartup, S::kAny, 0, 99, ""},
    {"BackendMain", P::kStartup, S::kBackend, 17, 99, "17+: the backend's entry (backend_startup.c)"},
    {"BackendRun", P::kStartup, S::kBackend, 0, 16, "static: named only in builds with symbols"},
    {"PostmasterMain", P::kStartup, S::kBackend, 0, 99,
     "fallback in a backend: what lies between PostmasterMain and PostgresMain is BackendStartup, "
     "BackendInitialize, ProcessStartupPacket (static, [unknown] in Debian's build)"},
    // --- tls: the TLS handshake of a connection with sslmode on, in the new
    // backend (ProcessStartupPacket -> secure_open_server), before auth. Its
    // later reads and writes (be_tls_read/write) stay in their callers' phases.
    {"be_tls_open_server", P::kTls, S::kAny, 0, 99, "be-secure-openssl.c: SSL_accept and the certificate's signature"},
    {"secure_open_server", P::kTls, S::kAny, 0, 99, "be-secure.c"},
    // --- auth
    {"ClientAuthentication", P::kAuth, S::kAny, 0, 99, ""},
    // --- scram: the password exchange, inside ClientAuthentication
    {"CheckSASLAuth", P::kScram, S::kAny, 14, 99, "auth-sasl.c (14+): the SASL exchange's round trips"},
    {"scram_exchange", P::kScram, S::kAny, 14, 99, "auth-scram.c, static: named only in builds with symbols"},
    {"CheckSCRAMAuth", P::kScram, S::kAny, 10, 13, "auth.c, static: named only in builds with symbols"},
    {"pg_be_scram_exchange", P::kScram, S::kAny, 10, 13, "auth-scram.c (<= 13)"},
    {"CheckPWChallengeAuth", P::kScram, S::kAny, 10, 99, "auth.c, static: the role's secret, then the exchange"},
    {"get_role_password", P::kScram, S::kAny, 10, 99, "crypt.c: the role's SCRAM secret, from pg_authid"},
    {"PerformAuthentication", P::kAuth, S::kAny, 0, 99, "static: named only in builds with symbols"},
    // --- init: PGPROC, InitPostgres and the caches
    {"InitProcess", P::kInit, S::kAny, 0, 99, "the backend's PGPROC"},
    {"BaseInit", P::kInit, S::kAny, 0, 99, "PostgresMain, before InitPostgres"},
    {"InitPostgres", P::kInit, S::kAny, 0, 99, "relcache/catcache init, the database, settings"},
    {"InitProcessPhase2", P::kInit, S::kAny, 0, 99, ""},
    {"RelationCacheInitialize", P::kInit, S::kAny, 0, 99, ""},
    {"RelationCacheInitializePhase2", P::kInit, S::kAny, 0, 99, ""},
    {"RelationCacheInitializePhase3", P::kInit, S::kAny, 0, 99, "reads pg_internal.init"},
    {"InitCatalogCache", P::kInit, S::kAny, 0, 99, ""},
    {"InitCatalogCachePhase2", P::kInit, S::kAny, 0, 99, ""},
    {"BeginReportingGUCOptions", P::kInit, S::kAny, 0, 99, "PostgresMain, after InitPostgres"},
    {"process_session_preload_libraries", P::kInit, S::kAny, 0, 99, ""},
    // --- work: the query loop
    {"exec_simple_query", P::kWork, S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"exec_parse_message", P::kWork, S::kAny, 0, 99, "extended protocol"},
    {"exec_bind_message", P::kWork, S::kAny, 0, 99, "extended protocol"},
    {"exec_execute_message", P::kWork, S::kAny, 0, 99, "extended protocol"},
    {"ReadCommand", P::kWork, S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"ReadyForQuery", P::kWork, S::kAny, 0, 99, ""},
    // DWARF stacks are cut at perf's 8 KB stack copy: a planner or executor
    // stack may lose exec_simple_query, so the query path's own entries too.
    {"pg_parse_query", P::kWork, S::kAny, 0, 99, "query path (stacks cut before exec_simple_query)"},
    {"pg_analyze_and_rewrite_fixedparams", P::kWork, S::kAny, 15, 99, "query path"},
    {"pg_plan_queries", P::kWork, S::kAny, 0, 99, "query path"},
    {"standard_planner", P::kWork, S::kAny, 0, 99, "query path"},
    {"PortalStart", P::kWork, S::kAny, 0, 99, "query path"},
    {"PortalRun", P::kWork, S::kAny, 0, 99, "query path"},
    {"standard_ExecutorStart", P::kWork, S::kAny, 0, 99, "query path"},
    {"standard_ExecutorRun", P::kWork, S::kAny, 0, 99, "query path"},
    {"PostgresMain", P::kWork, S::kBackend, 0, 99,
     "fallback in a backend: PostgresMain's own loop (ReadCommand, static) once init/exit rules did not claim"},
    // --- exit: user-space exit of the backend
    {"proc_exit", P::kExit, S::kAny, 0, 99, "on 'X': proc_exit -> shmem_exit -> callbacks"},
    {"proc_exit_prepare", P::kExit, S::kAny, 0, 99, ""},
    {"shmem_exit", P::kExit, S::kAny, 0, 99, "the on_shmem_exit callbacks (ProcKill, AtProcExit_Buffers, pgstat)"},
    {"ProcKill", P::kExit, S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"AtProcExit_Buffers", P::kExit, S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"exit", P::kExit, S::kAny, 0, 99, "libc exit: atexit handlers, library destructors"},
    {"__run_exit_handlers", P::kExit, S::kAny, 0, 99, "libc"},
    {"_dl_fini", P::kExit, S::kAny, 0, 99, "ld.so: shared library destructors"},
    {"OPENSSL_cleanup", P::kExit, S::kAny, 0, 99, "libcrypto's atexit handler"},
    {"_exit", P::kExit, S::kAny, 0, 99, "libc _exit, until the kernel's do_exit"},
    // --- kernel_exit: the kernel ends the process
    {"do_exit", P::kKernelExit, S::kAny, 0, 99, "kernel"},
    {"do_group_exit", P::kKernelExit, S::kAny, 0, 99, "kernel"},
    {"exit_mmap", P::kKernelExit, S::kAny, 0, 99, "kernel: unmapping the address space"},
    {"exit_mm", P::kKernelExit, S::kAny, 0, 99, "kernel"},
    {"mmput", P::kKernelExit, S::kAny, 0, 99, "kernel"},
    {"unmap_vmas", P::kKernelExit, S::kAny, 0, 99, "kernel"},
    {"exit_files", P::kKernelExit, S::kAny, 0, 99, "kernel"},
    // --- reap: the postmaster's SIGCHLD handler (reaper, static) behind signal frames
    {"reaper", P::kReap, S::kPostmaster, 0, 16, "static: named only in builds with symbols"},
    {"CleanupBackend", P::kReap, S::kPostmaster, 0, 99, "static: named only in builds with symbols"},
    {"process_pm_child_exit", P::kReap, S::kPostmaster, 17, 99, "17+; static"},
    {"ReleasePostmasterChildSlot", P::kReap, S::kPostmaster, 0, 99, "pmsignal.c: named in Debian's build"},
    {"__dcigettext", P::kReap, S::kPostmaster, 0, 16,
     "CleanupBackend's _(\"server process\"), translated at every child exit; seen only there"},
    {"__wait4", P::kReap, S::kPostmaster, 0, 99, "libc waitpid"},
    {"__GI___wait4", P::kReap, S::kPostmaster, 0, 99, "libc waitpid (as perf names it with libc's symbols)"},
    {"waitpid", P::kReap, S::kPostmaster, 0, 99, "libc"},
    {"__waitpid", P::kReap, S::kPostmaster, 0, 99, "libc"},
    {"kernel_wait4", P::kReap, S::kAny, 0, 99, "kernel"},
    {"do_wait", P::kReap, S::kAny, 0, 99, "kernel"},
    {"release_task", P::kReap, S::kAny, 0, 99, "kernel"},
    // --- the rest of the postmaster, and auxiliary processes
    {"PostmasterMain", P::kPostmasterOther, S::kPostmaster, 0, 99,
     "fallback in the postmaster: ServerLoop's wait, copy-on-write faults after fork, ..."},
    {kAnyFrame, P::kAux, S::kAux, 0, 99, "every sample of an auxiliary process (checkpointer, walwriter, ...)"},
};

constexpr int kScopes = 4;

}  // namespace

std::string_view RuleScopeName(RuleScope scope) {
  switch (scope) {
    case RuleScope::kAny:
      return "any";
    case RuleScope::kPostmaster:
      return "postmaster";
    case RuleScope::kBackend:
      return "backend";
    case RuleScope::kAux:
      return "aux";
  }
  return "?";
}

RuleScope ScopeOfRole(std::string_view role) {
  if (role == kPostmasterRole) return RuleScope::kPostmaster;
  if (role == kBackendRole) return RuleScope::kBackend;
  return RuleScope::kAux;
}

std::span<const PhaseRule> PhaseRules() { return kRules; }

PhaseClassifier::PhaseClassifier(int major) : major_(major) {
  for (const PhaseRule& rule : kRules) {
    if (major < rule.min_major || major > rule.max_major) continue;
    Match& match = rule.function == kAnyFrame ? any_frame_ : by_function_[rule.function];
    for (int s = 1; s < kScopes; ++s) {
      if ((rule.scope == RuleScope::kAny || static_cast<int>(rule.scope) == s) && !match.phase[s]) {
        match.phase[s] = rule.phase;
      }
    }
  }
}

std::optional<RealPhase> PhaseClassifier::Classify(std::string_view role,
                                                   std::span<const std::string> frames_root_first) const {
  const int scope = static_cast<int>(ScopeOfRole(role));
  for (auto it = frames_root_first.rbegin(); it != frames_root_first.rend(); ++it) {
    auto found = by_function_.find(std::string_view(*it));
    if (found != by_function_.end() && found->second.phase[scope]) return found->second.phase[scope];
  }
  return any_frame_.phase[scope];
}

void ExplainPhases(std::ostream& out, int major) {
  out << "phase rules for PostgreSQL " << major
      << ": a sample's stack is scanned from the leaf toward the root; the first frame with a rule for\n"
         "its process (postmaster, backend, or an auxiliary process) decides; '*' claims what no frame did;\n"
         "a sample nothing claims is counted as `unclaimed`. Names are as perf prints them (exact match).\n\n";
  out << absl::StrFormat("%-34s %-17s %-11s %s\n", "function", "phase", "process", "why");
  for (const PhaseRule& rule : kRules) {
    if (major < rule.min_major || major > rule.max_major) continue;
    out << absl::StrFormat("%-34s %-17s %-11s %s\n", rule.function, RealPhaseName(rule.phase), RuleScopeName(rule.scope),
                           rule.why);
  }
}

}  // namespace backendlab::pgreal
