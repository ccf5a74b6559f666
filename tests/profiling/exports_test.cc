// The exports on hand-made profiles: speedscope's and Chrome's JSON as
// their formats lay them out, and pprof's file a gzip of a protobuf that
// holds every name and label (Go's pprof reads it back in
// tests/tools/views_cli_test.cc).
#include "profiling/exports.h"

#include <zlib.h>

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace backendlab::profiling {
namespace {

FoldedStacks Labeled() {
  absl::StatusOr<FoldedStacks> s = FoldedStacks::Parse(
      "backend;[init];main;InitPostgres 3\n"
      "backend;[exit];main;proc_exit 2\n"
      "postmaster;main;fork_process 4\n"
      "checkpointer;main;CheckpointerMain 1\n");
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

std::string Role(std::string_view p) { return p == "backend" || p == "postmaster" ? std::string(p) : "aux"; }

TEST(ExportsTest, SpeedscopeHasASampledProfilePerRoleInNanoseconds) {
  const FoldedStacks labeled = Labeled();
  const nlohmann::json j = nlohmann::json::parse(
      ToSpeedscopeJson({.title = "t", .sources = {{"15/128MB", &labeled, 1'000'000}}, .role = Role}));
  EXPECT_EQ(j["$schema"], "https://www.speedscope.app/file-format-schema.json");
  ASSERT_EQ(j["profiles"].size(), 3u) << "aux, backend, postmaster";
  int64_t weight = 0;
  for (const nlohmann::json& p : j["profiles"]) {
    EXPECT_EQ(p["type"], "sampled");
    EXPECT_EQ(p["unit"], "nanoseconds");
    ASSERT_EQ(p["samples"].size(), p["weights"].size());
    int64_t sum = 0;
    for (const nlohmann::json& w : p["weights"]) sum += w.get<int64_t>();
    EXPECT_EQ(p["endValue"].get<int64_t>(), sum);
    weight += sum;
  }
  EXPECT_EQ(weight, 10 * 1'000'000) << "every sample once, a millisecond each";
  const nlohmann::json& backend = j["profiles"][1];
  EXPECT_EQ(backend["name"], "15/128MB: backend");
  const nlohmann::json& frames = j["shared"]["frames"];
  std::vector<std::string> first;
  for (const nlohmann::json& i : backend["samples"][0]) first.push_back(frames[i.get<size_t>()]["name"]);
  EXPECT_EQ(first, (std::vector<std::string>{"backend", "[exit]", "main", "proc_exit"})) << "root first, the phase after the process";
}

TEST(ExportsTest, ChromeTraceHasATrackPerProcessAndCompleteEventsInMicroseconds) {
  const std::vector<TraceSpan> spans = {{"fork", "phase", 7, "backend 7", 5'000'000, 120'000},
                                        {"init", "phase", 7, "backend 7", 5'120'000, 900'000},
                                        {"fork", "phase", 8, "backend 8", 4'000'000, 100'000}};
  const nlohmann::json j = nlohmann::json::parse(ToChromeTraceJson(spans, "run"));
  int metadata = 0;
  std::vector<double> ts;
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e["ph"] == "M") ++metadata;
    if (e["ph"] == "X") ts.push_back(e["ts"].get<double>());
  }
  EXPECT_EQ(metadata, 4) << "a process and a thread name per track";
  EXPECT_EQ(ts, (std::vector<double>{1000, 1120, 0})) << "microseconds from the earliest span";
  EXPECT_EQ(j["traceEvents"].back()["dur"].get<double>(), 100);
  EXPECT_EQ(j["displayTimeUnit"], "ms");
}

TEST(ExportsTest, PprofIsAGzippedProfileHoldingEveryNameAndLabel) {
  const FoldedStacks labeled = Labeled();
  const std::string gz = ToPprofGzip({.title = "t", .sources = {{"15/128MB", &labeled, 1'000'000}}, .role = Role});
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f) << "gzip's magic";
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  std::string raw(1 << 16, '\0');
  z_stream zs{};
  ASSERT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(raw.data());
  zs.avail_out = static_cast<uInt>(raw.size());
  ASSERT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  raw.resize(zs.total_out);
  inflateEnd(&zs);
  for (const char* s : {"samples", "count", "cpu", "nanoseconds", "profile", "15/128MB", "phase", "init", "exit", "process",
                        "role", "aux", "InitPostgres", "fork_process", "CheckpointerMain"}) {
    EXPECT_NE(raw.find(s), std::string::npos) << s;
  }
  // Field 1 of Profile, length-delimited: the first sample type.
  EXPECT_EQ(raw[0], '\x0a');
}

}  // namespace
}  // namespace backendlab::profiling
