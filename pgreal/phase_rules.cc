// The phase rule table for real PostgreSQL stacks, and its classifier.
#include "pgreal/phase_rules.h"

#include "absl/strings/str_format.h"

namespace backendlab::pgreal {
namespace {

using S = RuleScope;

// Names checked in postgres/postgres (postmaster.c, launch_backend.c,
// backend_startup.c, postgres.c, postinit.c, ipc.c, pmsignal.c) and against
// perf stacks of Debian's 15; glibc's and the kernel's as perf prints them.
constexpr PhaseRule kRules[] = {
    // --- the postmaster accepts the connection
    {"StreamConnection", "accept", S::kPostmaster, 0, 16, "accept() of the new connection (pqcomm.c, <= 16)"},
    {"AcceptConnection", "accept", S::kPostmaster, 17, 99, "accept() of the new connection (pqcomm.c, 17+)"},
    {"accept", "accept", S::kPostmaster, 0, 99, "libc accept"},
    {"__libc_accept", "accept", S::kPostmaster, 0, 99, "libc accept"},
    {"accept4", "accept", S::kPostmaster, 0, 99, "libc accept4"},
    {"__sys_accept4", "accept", S::kPostmaster, 0, 99, "kernel accept"},
    // --- fork: the postmaster's fork() and the child's part of fork_process
    {"fork_process", "fork", S::kAny, 0, 99, "fork(); in the child also its post-fork set-up (RAND_poll, ...)"},
    {"postmaster_child_launch", "fork", S::kAny, 17, 99, "17+: BackendStartup's fork (launch_backend.c)"},
    {"BackendStartup", "fork", S::kPostmaster, 0, 99, "static: named only in builds with symbols"},
    {"AssignPostmasterChildSlot", "fork", S::kPostmaster, 0, 99, "BackendStartup's child slot"},
    {"pg_strong_random", "fork", S::kPostmaster, 0, 99,
     "BackendStartup's cancel key (the postmaster's only per-connection random)"},
    {"ret_from_fork", "fork", S::kAny, 0, 99, "kernel: the child's first return to user space"},
    {"ret_from_fork_asm", "fork", S::kAny, 0, 99, "kernel"},
    {"schedule_tail", "fork", S::kAny, 0, 99, "kernel: the child's first schedule"},
    {"copy_process", "fork", S::kAny, 0, 99, "kernel: fork's copy of the process"},
    {"dup_mm", "fork", S::kAny, 0, 99, "kernel"},
    {"dup_mmap", "fork", S::kAny, 0, 99, "kernel"},
    {"copy_page_range", "fork", S::kAny, 0, 99, "kernel"},
    {"kernel_clone", "fork", S::kAny, 0, 99, "kernel"},
    {"_Fork", "fork", S::kAny, 0, 99, "libc fork"},
    {"__libc_fork", "fork", S::kAny, 0, 99, "libc fork"},
    // --- startup: the new backend reads its start-up packet
    {"InitPostmasterChild", "startup", S::kAny, 0, 99, "the child detaches from the postmaster"},
    {"ClosePostmasterPorts", "startup", S::kAny, 0, 99, ""},
    {"BackendInitialize", "startup", S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"ProcessStartupPacket", "startup", S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"pq_init", "startup", S::kAny, 0, 99, ""},
    {"BackendMain", "startup", S::kBackend, 17, 99, "17+: the backend's entry (backend_startup.c)"},
    {"BackendRun", "startup", S::kBackend, 0, 16, "static: named only in builds with symbols"},
    {"PostmasterMain", "startup", S::kBackend, 0, 99,
     "fallback in a backend: what lies between PostmasterMain and PostgresMain is BackendStartup, "
     "BackendInitialize, ProcessStartupPacket (static, [unknown] in Debian's build)"},
    // --- tls: the TLS handshake of a connection with sslmode on, in the new
    // backend (ProcessStartupPacket -> secure_open_server), before auth. Its
    // later reads and writes (be_tls_read/write) stay in their callers' phases.
    {"be_tls_open_server", "tls", S::kAny, 0, 99, "be-secure-openssl.c: SSL_accept and the certificate's signature"},
    {"secure_open_server", "tls", S::kAny, 0, 99, "be-secure.c"},
    // --- auth
    {"ClientAuthentication", "auth", S::kAny, 0, 99, ""},
    // --- scram: the password exchange, inside ClientAuthentication
    {"CheckSASLAuth", "scram", S::kAny, 14, 99, "auth-sasl.c (14+): the SASL exchange's round trips"},
    {"scram_exchange", "scram", S::kAny, 14, 99, "auth-scram.c, static: named only in builds with symbols"},
    {"CheckSCRAMAuth", "scram", S::kAny, 10, 13, "auth.c, static: named only in builds with symbols"},
    {"pg_be_scram_exchange", "scram", S::kAny, 10, 13, "auth-scram.c (<= 13)"},
    {"CheckPWChallengeAuth", "scram", S::kAny, 10, 99, "auth.c, static: the role's secret, then the exchange"},
    {"get_role_password", "scram", S::kAny, 10, 99, "crypt.c: the role's SCRAM secret, from pg_authid"},
    {"PerformAuthentication", "auth", S::kAny, 0, 99, "static: named only in builds with symbols"},
    // --- init: PGPROC, InitPostgres and the caches
    {"InitProcess", "init", S::kAny, 0, 99, "the backend's PGPROC"},
    {"BaseInit", "init", S::kAny, 0, 99, "PostgresMain, before InitPostgres"},
    {"InitPostgres", "init", S::kAny, 0, 99, "relcache/catcache init, the database, settings"},
    {"InitProcessPhase2", "init", S::kAny, 0, 99, ""},
    {"RelationCacheInitialize", "init", S::kAny, 0, 99, ""},
    {"RelationCacheInitializePhase2", "init", S::kAny, 0, 99, ""},
    {"RelationCacheInitializePhase3", "init", S::kAny, 0, 99, "reads pg_internal.init"},
    {"InitCatalogCache", "init", S::kAny, 0, 99, ""},
    {"InitCatalogCachePhase2", "init", S::kAny, 0, 99, ""},
    {"BeginReportingGUCOptions", "init", S::kAny, 0, 99, "PostgresMain, after InitPostgres"},
    {"process_session_preload_libraries", "init", S::kAny, 0, 99, ""},
    // --- work: the query loop
    {"exec_simple_query", "work", S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"exec_parse_message", "work", S::kAny, 0, 99, "extended protocol"},
    {"exec_bind_message", "work", S::kAny, 0, 99, "extended protocol"},
    {"exec_execute_message", "work", S::kAny, 0, 99, "extended protocol"},
    {"ReadCommand", "work", S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"ReadyForQuery", "work", S::kAny, 0, 99, ""},
    // DWARF stacks are cut at perf's 8 KB stack copy: a planner or executor
    // stack may lose exec_simple_query, so the query path's own entries too.
    {"pg_parse_query", "work", S::kAny, 0, 99, "query path (stacks cut before exec_simple_query)"},
    {"pg_analyze_and_rewrite_fixedparams", "work", S::kAny, 15, 99, "query path"},
    {"pg_plan_queries", "work", S::kAny, 0, 99, "query path"},
    {"standard_planner", "work", S::kAny, 0, 99, "query path"},
    {"PortalStart", "work", S::kAny, 0, 99, "query path"},
    {"PortalRun", "work", S::kAny, 0, 99, "query path"},
    {"standard_ExecutorStart", "work", S::kAny, 0, 99, "query path"},
    {"standard_ExecutorRun", "work", S::kAny, 0, 99, "query path"},
    {"PostgresMain", "work", S::kBackend, 0, 99,
     "fallback in a backend: PostgresMain's own loop (ReadCommand, static) once init/exit rules did not claim"},
    // --- exit: user-space exit of the backend
    {"proc_exit", "exit", S::kAny, 0, 99, "on 'X': proc_exit -> shmem_exit -> callbacks"},
    {"proc_exit_prepare", "exit", S::kAny, 0, 99, ""},
    {"shmem_exit", "exit", S::kAny, 0, 99, "the on_shmem_exit callbacks (ProcKill, AtProcExit_Buffers, pgstat)"},
    {"ProcKill", "exit", S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"AtProcExit_Buffers", "exit", S::kAny, 0, 99, "static: named only in builds with symbols"},
    {"exit", "exit", S::kAny, 0, 99, "libc exit: atexit handlers, library destructors"},
    {"__run_exit_handlers", "exit", S::kAny, 0, 99, "libc"},
    {"_dl_fini", "exit", S::kAny, 0, 99, "ld.so: shared library destructors"},
    {"OPENSSL_cleanup", "exit", S::kAny, 0, 99, "libcrypto's atexit handler"},
    {"_exit", "exit", S::kAny, 0, 99, "libc _exit, until the kernel's do_exit"},
    // --- teardown: the kernel ends the process
    {"do_exit", "teardown", S::kAny, 0, 99, "kernel"},
    {"do_group_exit", "teardown", S::kAny, 0, 99, "kernel"},
    {"exit_mmap", "teardown", S::kAny, 0, 99, "kernel: unmapping the address space"},
    {"exit_mm", "teardown", S::kAny, 0, 99, "kernel"},
    {"mmput", "teardown", S::kAny, 0, 99, "kernel"},
    {"unmap_vmas", "teardown", S::kAny, 0, 99, "kernel"},
    {"exit_files", "teardown", S::kAny, 0, 99, "kernel"},
    // --- reap: the postmaster's SIGCHLD handler (reaper, static) behind signal frames
    {"reaper", "reap", S::kPostmaster, 0, 16, "static: named only in builds with symbols"},
    {"CleanupBackend", "reap", S::kPostmaster, 0, 99, "static: named only in builds with symbols"},
    {"process_pm_child_exit", "reap", S::kPostmaster, 17, 99, "17+; static"},
    {"ReleasePostmasterChildSlot", "reap", S::kPostmaster, 0, 99, "pmsignal.c: named in Debian's build"},
    {"__dcigettext", "reap", S::kPostmaster, 0, 16,
     "CleanupBackend's _(\"server process\"), translated at every child exit; seen only there"},
    {"__wait4", "reap", S::kPostmaster, 0, 99, "libc waitpid"},
    {"__GI___wait4", "reap", S::kPostmaster, 0, 99, "libc waitpid (as perf names it with libc's symbols)"},
    {"waitpid", "reap", S::kPostmaster, 0, 99, "libc"},
    {"__waitpid", "reap", S::kPostmaster, 0, 99, "libc"},
    {"kernel_wait4", "reap", S::kAny, 0, 99, "kernel"},
    {"do_wait", "reap", S::kAny, 0, 99, "kernel"},
    {"release_task", "reap", S::kAny, 0, 99, "kernel"},
    // --- the rest of the postmaster, and auxiliary processes
    {"PostmasterMain", "postmaster_other", S::kPostmaster, 0, 99,
     "fallback in the postmaster: ServerLoop's wait, copy-on-write faults after fork, ..."},
    {kAnyFrame, "aux", S::kAux, 0, 99, "every sample of an auxiliary process (checkpointer, walwriter, ...)"},
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
      if ((rule.scope == RuleScope::kAny || static_cast<int>(rule.scope) == s) && match.phase[s].empty()) {
        match.phase[s] = rule.phase;
      }
    }
  }
}

std::string_view PhaseClassifier::Classify(std::string_view role, std::span<const std::string> frames_root_first) const {
  const int scope = static_cast<int>(ScopeOfRole(role));
  for (auto it = frames_root_first.rbegin(); it != frames_root_first.rend(); ++it) {
    auto found = by_function_.find(std::string_view(*it));
    if (found != by_function_.end() && !found->second.phase[scope].empty()) return found->second.phase[scope];
  }
  if (!any_frame_.phase[scope].empty()) return any_frame_.phase[scope];
  return kUnclaimed;
}

void ExplainPhases(std::ostream& out, int major) {
  out << "phase rules for PostgreSQL " << major
      << ": a sample's stack is scanned from the leaf toward the root; the first frame with a rule for\n"
         "its process (postmaster, backend, or an auxiliary process) decides; '*' claims what no frame did;\n"
         "a sample nothing claims is counted as `unclaimed`. Names are as perf prints them (exact match).\n\n";
  out << absl::StrFormat("%-34s %-17s %-11s %s\n", "function", "phase", "process", "why");
  for (const PhaseRule& rule : kRules) {
    if (major < rule.min_major || major > rule.max_major) continue;
    out << absl::StrFormat("%-34s %-17s %-11s %s\n", rule.function, rule.phase, RuleScopeName(rule.scope), rule.why);
  }
}

}  // namespace backendlab::pgreal
