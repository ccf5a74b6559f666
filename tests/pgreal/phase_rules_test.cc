// The phase rules on hand-typed stacks, each modelled on a stack perf
// recorded of Debian's PostgreSQL 15 under pgbench -C -S (the capture in
// tests/pgreal/testdata is one such recording; the 17+ stacks follow those
// versions' source, not a recording), and the table's own consistency.
#include "pgreal/phase_rules.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace backendlab::pgreal {
namespace {

// A stack written root first, ';'-separated, as the folded format has it.
std::vector<std::string> Stack(const std::string& folded) { return absl::StrSplit(folded, ';'); }

constexpr char kBackendRoot[] =
    "_start;__libc_start_main@@GLIBC_2.34;__libc_start_call_main;main;PostmasterMain;[postgres]";

TEST(PhaseRulesTest, EveryRuleNamesAPhaseWord) {
  for (const PhaseRule& rule : PhaseRules()) {
    EXPECT_NE(RealPhaseName(rule.phase), "?") << rule.function;
    EXPECT_LE(rule.min_major, rule.max_major) << rule.function;
  }
}

TEST(PhaseRulesTest, LeafmostRuledFrameDecides) {
  const PhaseClassifier pg15(15);
  // proc_exit under PostgresMain: exit, though PostgresMain is `work`.
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack(std::string(kBackendRoot) +
                                           ";PostgresMain;proc_exit;exit;__run_exit_handlers;OPENSSL_cleanup;"
                                           "[libcrypto.so.3];EVP_RAND_CTX_free"))),
            "exit");
  // A page fault under InitPostgres: init.
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack(std::string(kBackendRoot) +
                                           ";PostgresMain;InitPostgres;EnablePortalManager;hash_create;[postgres];"
                                           "MemoryContextAlloc;[postgres];asm_exc_page_fault;exc_page_fault"))),
            "init");
  // ClientAuthentication under InitPostgres: auth.
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack(std::string(kBackendRoot) +
                                           ";PostgresMain;InitPostgres;ClientAuthentication;hba_getauthmethod"))),
            "auth");
  // The child's part of fork_process.
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack(std::string(kBackendRoot) +
                                           ";fork_process;RAND_poll;RAND_get_rand_method;asm_exc_page_fault"))),
            "fork");
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack(std::string(kBackendRoot) + ";InitPostmasterChild;InitializeLatchSupport"))),
            "startup");
  // Static BackendInitialize/ProcessStartupPacket: only PostmasterMain names them.
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack(std::string(kBackendRoot) + ";[postgres];pq_getbytes;secure_read"))),
            "startup");
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack(std::string(kBackendRoot) + ";PostgresMain;[postgres];pq_getbyte"))), "work");
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack("entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_exit_group;"
                                           "do_group_exit;do_exit;mmput;exit_mmap;unmap_vmas"))),
            "kernel_exit");
}

TEST(PhaseRulesTest, TheSameFrameMeansAPhasePerProcess) {
  const PhaseClassifier pg15(15);
  const std::string root = "_start;__libc_start_main@@GLIBC_2.34;__libc_start_call_main;main;PostmasterMain;[postgres]";
  EXPECT_EQ(PhaseWord(pg15.Classify("postmaster", Stack(root + ";fork_process;__libc_fork;_Fork;entry_SYSCALL_64_after_hwframe;"
                                                     "do_syscall_64;__do_sys_clone;kernel_clone;copy_process;dup_mmap"))),
            "fork");
  EXPECT_EQ(PhaseWord(pg15.Classify("postmaster", Stack(root + ";__select;[unknown];[unknown];__GI___wait4"))), "reap");
  EXPECT_EQ(PhaseWord(pg15.Classify("postmaster", Stack(root + ";__select;[unknown];[unknown];ReleasePostmasterChildSlot"))),
            "reap");
  EXPECT_EQ(PhaseWord(pg15.Classify("postmaster", Stack(root + ";pg_strong_random;RAND_status"))), "fork");
  EXPECT_EQ(PhaseWord(pg15.Classify("postmaster", Stack(root + ";asm_exc_page_fault;exc_page_fault;do_wp_page"))),
            "postmaster_other");
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack(root + ";pg_strong_random"))), "startup");
  EXPECT_EQ(PhaseWord(pg15.Classify("checkpointer", Stack(root + ";AuxiliaryProcessMain;CheckpointerMain"))), "aux");
}

// A regression fixture, not a test of correctness: stacks perf recorded of
// Debian's 15 over TCP with TLS and SCRAM (`pg --tcp=on --ssl=on
// --profile`, the heaviest two of each phase's folded file, each line
// "PHASE<tab>role;frames count"), each labelled with the phase the tool's
// own rules gave it then (the phase-NAME.folded file it came from). It
// checks that the rules still sort these real stacks as they did: the
// handshake `tls`, the password exchange `scram`, the rest of
// ClientAuthentication `auth`; that those labels are right rests on the
// frames each stack names (be_tls_open_server, CheckSASLAuth,
// hba_getauthmethod), read by a person, not on an independent classifier.
TEST(PhaseRulesTest, TlsAndScramOfARecordedConnectionKeepTheirEarlierPhases) {
  std::ifstream in(std::string(BACKENDLAB_PGREAL_TESTDATA) + "/pg15_tcp_ssl.phases");
  ASSERT_TRUE(in) << "no testdata";
  const PhaseClassifier pg15(15);
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#")) continue;  // the fixture's own note
    ++lines;
    const std::vector<std::string> fields = absl::StrSplit(line, '\t');
    ASSERT_EQ(fields.size(), 2u) << line;
    const std::string stack = fields[1].substr(0, fields[1].rfind(' '));
    std::vector<std::string> frames = Stack(stack);
    const std::string role = frames.front();
    frames.erase(frames.begin());
    EXPECT_EQ(PhaseWord(pg15.Classify(role, frames)), fields[0]) << stack;
  }
  EXPECT_EQ(lines, 6);
  // Before 14 the exchange ran under pg_be_scram_exchange; CheckSASLAuth came with 14.
  EXPECT_EQ(PhaseWord(PhaseClassifier(13).Classify("backend", Stack("main;PostmasterMain;ClientAuthentication;CheckSASLAuth"))),
            "auth");
  EXPECT_EQ(PhaseWord(PhaseClassifier(13).Classify("backend", Stack("main;PostmasterMain;ClientAuthentication;pg_be_scram_exchange"))),
            "scram");
}

TEST(PhaseRulesTest, UnclaimedIsSaid) {
  const PhaseClassifier pg15(15);
  EXPECT_EQ(PhaseWord(pg15.Classify("backend", Stack("[unknown];[unknown]"))), kUnclaimed);
  EXPECT_EQ(PhaseWord(pg15.Classify("postmaster", Stack("asm_exc_page_fault;exc_page_fault"))), kUnclaimed);
}

TEST(PhaseRulesTest, RulesFollowTheMajorVersion) {
  // 17 moved the child start into postmaster_child_launch and BackendMain.
  const std::vector<std::string> pg17_startup =
      Stack("main;PostmasterMain;[postgres];postmaster_child_launch;BackendMain;[postgres];pq_getbytes");
  EXPECT_EQ(PhaseWord(PhaseClassifier(17).Classify("backend", pg17_startup)), "startup");
  const std::vector<std::string> launch = Stack("main;PostmasterMain;[postgres];postmaster_child_launch");
  EXPECT_EQ(PhaseWord(PhaseClassifier(17).Classify("postmaster", launch)), "fork");
  EXPECT_EQ(PhaseWord(PhaseClassifier(15).Classify("postmaster", launch)), "postmaster_other");
  std::ostringstream out15, out17;
  ExplainPhases(out15, 15);
  ExplainPhases(out17, 17);
  EXPECT_EQ(out15.str().find("postmaster_child_launch"), std::string::npos);
  EXPECT_NE(out17.str().find("postmaster_child_launch"), std::string::npos);
  EXPECT_NE(out15.str().find("StreamConnection"), std::string::npos);
}

}  // namespace
}  // namespace backendlab::pgreal
