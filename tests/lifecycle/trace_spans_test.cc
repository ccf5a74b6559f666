// SpansOf: a finished backend's record as spans on its own track, each
// phase where its timestamps and wall times put it.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lifecycle/backend_record.h"

namespace backendlab::lifecycle {
namespace {

TEST(SpansOfTest, EachPhaseWhereTheRecordPutsIt) {
  BackendRecord r;
  r.pid = 42;
  r.sequence = 7;
  r.accept_ns = 100;
  r.child_start_ns = 200;
  r.ready_ns = 260;
  r.terminate_ns = 300;
  r.exit_ns = 320;
  r.reaped_ns = 400;
  const int64_t walls[kNumPhases] = {100, 10, 20, 0, 30, 5, 15, 80};
  for (Phase p : kAllPhases) {
    r.phase[static_cast<int>(p)].wall_ns = walls[static_cast<int>(p)];
    r.phases_done |= 1u << static_cast<int>(p);
  }
  struct Want {
    const char* name;
    int64_t start, duration;
  };
  const std::vector<Want> want = {{"fork", 100, 100},     {"init_buffers", 200, 10}, {"init_catcache", 210, 20},
                                  {"init_other", 230, 0}, {"work", 230, 30},         {"wait", 260, 40},
                                  {"exit_check", 300, 5}, {"teardown", 305, 15},     {"reap", 320, 80}};
  const std::vector<profiling::TraceSpan> spans = SpansOf(r);
  ASSERT_EQ(spans.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(spans[i].name, want[i].name);
    EXPECT_EQ(spans[i].start_ns, want[i].start) << want[i].name;
    EXPECT_EQ(spans[i].duration_ns, want[i].duration) << want[i].name;
    EXPECT_EQ(spans[i].pid, 42);
    EXPECT_EQ(spans[i].process, "backend 42 (connection 7)");
  }
  // A backend that died in its work phase has no later span.
  r.phases_done = 0b11111;  // fork .. work
  r.terminate_ns = r.exit_ns = r.reaped_ns = 0;
  const std::vector<profiling::TraceSpan> died = SpansOf(r);
  ASSERT_EQ(died.size(), 5u);
  EXPECT_EQ(died.back().name, "work");
}

}  // namespace
}  // namespace backendlab::lifecycle
