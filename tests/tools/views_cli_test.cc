// The views of a run, read back by real readers of their formats: `diff`
// of two folded files (its bad input too), `profile`'s pprof export by Go's
// pprof, its speedscope export and Chrome trace by speedscope's own app,
// and the HTML pages and flame graphs in headless Chromium (Playwright,
// tests/browser). Each reader missing here is a skip that names it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util/run_program.h"
#include "tests/test_util/skip.h"
#include "tests/tools/cli_fixture.h"

namespace backendlab::tools {
namespace {

using test_util::ReadFile;
using test_util::RunResult;

const std::string kBrowser = std::string(BACKENDLAB_SOURCE_DIR) + "/tests/browser";

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

class ViewsTest : public CliTest {
 protected:
  void WriteFile(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  // Node.js, Chromium and tests/browser's packages (npm ci): what the
  // browser checks need; "" when all are here, else what is missing.
  static std::string BrowserMissing() {
    if (!Executable("/usr/bin/chromium")) return "no /usr/bin/chromium (tools/install-deps --test installs Debian's chromium)";
    if (!Executable(Node())) return "no Node.js to drive it";
    if (!std::filesystem::exists(kBrowser + "/node_modules/playwright-core")) {
      return "no tests/browser/node_modules (tools/test runs npm ci there)";
    }
    return "";
  }
  static std::string Node() {
    for (const char* p : {"/usr/bin/node", "/usr/local/bin/node"}) {
      if (Executable(p)) return p;
    }
    return "/usr/bin/node";
  }
  RunResult RunNode(const std::string& script, std::vector<std::string> args) {
    args.insert(args.begin(), {Node(), kBrowser + "/" + script});
    return test_util::RunProgram(std::move(args), dir_);
  }
};

// A: 100 connections at 1 kHz; B: 50. Per connection (10 and 20 us a
// sample): scan 5000 -> 200 us, lookup 2000 -> 2000, fork 0 -> 600.
constexpr char kA[] = "backend;main;exit_check;scan 500\nbackend;main;work;lookup 200\n";
constexpr char kB[] = "backend;main;exit_check;scan 10\nbackend;main;work;lookup 100\npostmaster;fork 30\n";

TEST_F(ViewsTest, DiffSetsTwoFoldedFilesAgainstEachOtherPerConnection) {
  WriteFile("a.folded", kA);
  WriteFile("b.folded", kB);
  const RunResult r = Run({"diff", dir_ + "/a.folded", dir_ + "/b.folded", "--out=" + dir_ + "/d",
                           "--connections=100,50", "--frequency=1000", "--names=array,hash", "--json=" + dir_ + "/d.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("in us per connection"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(dir_ + "/d/diff.folded"),
            "backend;main;exit_check;scan 5000 200\nbackend;main;work;lookup 2000 2000\npostmaster;fork 0 600\n");
  EXPECT_NE(ReadFile(dir_ + "/d/diff.svg").find("<g class=\"panel\""), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir_ + "/d.json"))["diff"];
  ASSERT_EQ(j["grown"].size(), 1u);
  EXPECT_EQ(j["grown"][0]["name"], "fork");
  EXPECT_DOUBLE_EQ(j["grown"][0]["b_self"].get<double>(), 600);
  ASSERT_EQ(j["shrunk"].size(), 1u);
  EXPECT_EQ(j["shrunk"][0]["name"], "scan");
  EXPECT_DOUBLE_EQ(j["shrunk"][0]["a_self"].get<double>(), 5000);

  // Without --connections: each side as a share of its sampled CPU.
  const RunResult shares = Run({"diff", dir_ + "/a.folded", dir_ + "/b.folded", "--out=" + dir_ + "/s"});
  ASSERT_EQ(shares.exit_code, 0) << shares.err;
  EXPECT_NE(shares.out.find("ms per second of sampled CPU"), std::string::npos) << shares.out;
  EXPECT_NE(ReadFile(dir_ + "/s/diff.folded").find("postmaster;fork 0 214.286\n"), std::string::npos)
      << "30 of B's 140 samples";
}

TEST_F(ViewsTest, DiffBadInputIsOneLineAndExitTwo) {
  WriteFile("a.folded", kA);
  WriteFile("bad.folded", "main;work 3\nmain;idle three\n");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      {{"diff", dir_ + "/a.folded"}, "give two folded files"},
      {{"diff", dir_ + "/a.folded", dir_ + "/bad.folded"}, "line 2"},
      {{"diff", dir_ + "/a.folded", dir_ + "/none.folded"}, "cannot read"},
      {{"diff", dir_ + "/a.folded", dir_}, "Is a directory"},
      {{"diff", dir_ + "/a.folded", dir_ + "/a.folded", "--frequency=99"}, "--frequency goes with --connections"},
      {{"diff", dir_ + "/a.folded", dir_ + "/a.folded", "--connections=5"}, "two counts"},
  };
  for (const Case& c : cases) {
    const RunResult r = Run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.err;
    EXPECT_TRUE(test_util::IsOneLineStartingWith(r.err, "backendlab diff: ")) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  // An --out that cannot be written is found before anything is read.
  WriteFile("file", "");
  const RunResult out = Run({"diff", dir_ + "/a.folded", dir_ + "/a.folded", "--out=" + dir_ + "/file"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_NE(out.err.find("--out="), std::string::npos) << out.err;
}

TEST_F(ViewsTest, EmptyProfilesStillWriteValidFilesAndSaySo) {
  WriteFile("a.folded", "");
  WriteFile("b.folded", "");
  const RunResult r = Run({"diff", dir_ + "/a.folded", dir_ + "/b.folded", "--out=" + dir_ + "/d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("A has no samples"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(dir_ + "/d/diff.folded"), "");
  EXPECT_NE(ReadFile(dir_ + "/d/diff.svg").find("</svg>"), std::string::npos);
}

// The top functions by own samples as `go tool pprof -top` lists them: its
// flat column (samples) and name, most first.
std::vector<std::pair<std::string, int64_t>> PprofTop(const std::string& text) {
  std::vector<std::pair<std::string, int64_t>> top;
  bool table = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("flat%") != std::string::npos) {
      table = true;
      continue;
    }
    if (!table) continue;
    std::istringstream fields(line);
    std::string flat, flat_pc, sum_pc, cum, cum_pc, name;
    if (!(fields >> flat >> flat_pc >> sum_pc >> cum >> cum_pc)) continue;
    std::getline(fields, name);
    name.erase(0, name.find_first_not_of(' '));
    top.emplace_back(name, std::atoll(flat.c_str()));
  }
  return top;
}

TEST_F(ViewsTest, ProfilesPprofExportIsReadByGoPprofAndItsTraceHasEachBackendsPhases) {
  const std::string pprof = dir_ + "/p.pb.gz", trace = dir_ + "/t.json";
  const RunResult r = Run({"profile", "--layout=array", "--exit-check=always", "--shared-buffers=1GB",
                           "--connections=300", "--frequency=2000", "--out=" + dir_ + "/prof", "--pprof=" + pprof,
                           "--trace=" + trace, "--trace-connections=20", "--top=1000", "--json=" + dir_ + "/run.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The trace: a track per backend of the first 20 connections, their
  // phases as spans, fork and reap among them.
  const nlohmann::json events = nlohmann::json::parse(ReadFile(trace))["traceEvents"];
  std::map<int64_t, std::vector<std::string>> phases_of;
  size_t tracks = 0;
  for (const nlohmann::json& e : events) {
    if (e["ph"] == "M" && e["name"] == "process_name") ++tracks;
    if (e["ph"] == "X") phases_of[e["pid"].get<int64_t>()].push_back(e["name"]);
  }
  EXPECT_EQ(tracks, 20u);
  for (const auto& [pid, phases] : phases_of) {
    for (const char* p : {"fork", "init_buffers", "exit_check", "reap"}) {
      EXPECT_NE(std::find(phases.begin(), phases.end(), p), phases.end()) << pid << " has no " << p;
    }
  }
  // pprof's own top-10 of the backends' samples is the tool's.
  if (!Executable("/usr/bin/go")) {
    BACKENDLAB_SKIP(test_util::kNeedsGo) << "no /usr/bin/go (Debian's golang-go: tools/install-deps --test)";
  }
  const RunResult top = test_util::RunProgram(
      // -symbolize=none: the names as written, not shortened ("(anonymous namespace)" kept).
      {"/usr/bin/go", "tool", "pprof", "-top", "-nodecount=10", "-sample_index=samples", "-tagfocus=role=backend",
       "-symbolize=none", pprof},
      dir_);
  ASSERT_EQ(top.exit_code, 0) << top.err;
  const std::vector<std::pair<std::string, int64_t>> theirs = PprofTop(top.out);
  const nlohmann::json ours = nlohmann::json::parse(ReadFile(dir_ + "/run.json"))["header"]["top"];
  ASSERT_GE(theirs.size(), 10u) << top.out;
  ASSERT_GE(ours.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    SCOPED_TRACE(top.out);
    EXPECT_EQ(theirs[i].second, ours[i]["self"].get<int64_t>()) << "place " << i;
    // Equal counts may come in either order: the names match within them.
    if (theirs[i].first != ours[i]["function"]) {
      EXPECT_TRUE(std::any_of(ours.begin(), ours.end(), [&](const nlohmann::json& f) {
        return f["function"] == theirs[i].first && f["self"].get<int64_t>() == theirs[i].second;
      })) << theirs[i].first;
    }
  }
}

TEST_F(ViewsTest, ProfileSpeedscopeAndTraceExportsAreReadBySpeedscope) {
  if (const std::string why = BrowserMissing(); !why.empty()) BACKENDLAB_SKIP(test_util::kNeedsChromium) << why;
  const std::string speedscope = dir_ + "/s.json", trace = dir_ + "/t.json";
  const RunResult r = Run({"profile", "--layout=hash", "--shared-buffers=128MB", "--connections=200",
                           "--out=" + dir_ + "/prof", "--speedscope=" + speedscope, "--trace=" + trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // speedscope titles its own format by the file's name (the run's
  // configuration), a trace by the file name.
  const RunResult read = RunNode("check_speedscope.mjs", {"layout hash=" + speedscope, "t.json=" + trace});
  EXPECT_EQ(read.exit_code, 0) << read.err << read.out;
}

// The main job's page: its table, its chart, the baseline's flame graph and
// each other row's diff against it at the largest shared_buffers, and the
// baseline's first backends on the timeline.
TEST_F(ViewsTest, HtmlPageOfCompareRendersItsTableFlameGraphsAndTimelineInChromium) {
  if (const std::string why = BrowserMissing(); !why.empty()) BACKENDLAB_SKIP(test_util::kNeedsChromium) << why;
  const std::string page = dir_ + "/compare.html", json = dir_ + "/compare.json";
  const RunResult r = Run({"compare", "--layouts=array,hash", "--exit-checks=always", "--shared-buffers=128MB,1GB",
                           "--connections=10", "--warmup=1", "--rounds=2", "--profile-connections=300",
                           "--html=" + page, "--json=" + json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("for the page: each configuration at 1GB profiled once more"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hash/always: "), std::string::npos) << r.out;
  const std::string html = ReadFile(page);
  // Namespaces are names, not references ("http://www.w3.org/2000/svg"):
  // what would load something is looked for, and check_page.mjs fails on
  // any request the page makes.
  for (const char* external : {"src=", "href=", "url(", "@import", "<link", "fetch(", "XMLHttpRequest"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << "the page references " << external;
  }
  // Every frame of both graphs is under "all": a search for it lights
  // frames whatever the sampler caught.
  const RunResult check = RunNode("check_page.mjs", {page, json, "^all$"});
  EXPECT_EQ(check.exit_code, 0) << check.err << check.out;
  EXPECT_NE(check.out.find("\"rows\":4"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("\"graphs\":2"), std::string::npos) << "array/always's, and hash/always's diff: " << check.out;
  EXPECT_NE(check.out.find("\"timeline\":200"), std::string::npos) << "the baseline's first 200 backends: " << check.out;
}

TEST_F(ViewsTest, CompareProfileConnectionsGoesWithHtml) {
  const RunResult r = Run({"compare", "--profile-connections=10"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--profile-connections goes with --html"), std::string::npos) << r.err;
}

TEST_F(ViewsTest, HtmlPageOfAProfileAgainstItsBaselineSearchesItsFlameGraphs) {
  if (const std::string why = BrowserMissing(); !why.empty()) BACKENDLAB_SKIP(test_util::kNeedsChromium) << why;
  const std::string page = dir_ + "/profile.html", json = dir_ + "/profile.json", out = dir_ + "/prof";
  const RunResult r = Run({"profile", "--layout=hash", "--exit-check=always", "--baseline=array/always",
                           "--shared-buffers=1GB", "--connections=200", "--out=" + out, "--html=" + page,
                           "--json=" + json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("against the baseline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shrank most"), std::string::npos) << r.out;
  const RunResult check = RunNode("check_page.mjs", {page, json, "backend"});
  EXPECT_EQ(check.exit_code, 0) << check.err << check.out;
  EXPECT_NE(check.out.find("\"graphs\":3"), std::string::npos) << "all, phases and the diff: " << check.out;
  // The differential flame graph alone, as an SVG file a browser opens.
  const RunResult svg = RunNode("check_page.mjs", {out + "/diff.svg", "-", "backend"});
  EXPECT_EQ(svg.exit_code, 0) << svg.err << svg.out;
}

// Audit B26: the zoom check passed a graph in which it found no frame to
// click (none at level 1). Such a graph now fails it. 20,000 stacks of one
// frame, a sample each: every frame is narrower than the 0.1 px drawn, so
// each panel holds "all" alone, which a search for it still lights.
TEST_F(ViewsTest, TheBrowserCheckFailsAGraphWithNoFrameToClick) {
  if (const std::string why = BrowserMissing(); !why.empty()) BACKENDLAB_SKIP(test_util::kNeedsChromium) << why;
  std::string wide;
  for (int i = 0; i < 20'000; ++i) wide += "f" + std::to_string(i) + " 1\n";
  WriteFile("wide.folded", wide);
  const RunResult r = Run({"diff", dir_ + "/wide.folded", dir_ + "/wide.folded", "--out=" + dir_ + "/d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = ReadFile(dir_ + "/d/diff.svg");
  ASSERT_EQ(svg.find("data-l=\"1\""), std::string::npos) << "a frame at level 1 is drawn";
  ASSERT_NE(svg.find("data-l=\"0\""), std::string::npos) << "all is not drawn";
  const RunResult check = RunNode("check_page.mjs", {dir_ + "/d/diff.svg", "-", "^all$"});
  EXPECT_EQ(check.exit_code, 1) << check.err << check.out;
  EXPECT_NE(check.err.find("no frame to click"), std::string::npos) << check.err;
}

}  // namespace
}  // namespace backendlab::tools
