// The CLI's building blocks: Report (text, CSV, JSON renderings), the
// output-path check and the --name=value flag parser.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/test_util/full_disk.h"
#include "tests/test_util/run_program.h"
#include "tests/test_util/skip.h"
#include "tests/test_util/temp_dir.h"
#include "nlohmann/json.hpp"
#include "tools/flags.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Columns of every kind: keyed and headed, text only (no key), machine only
// (no heading), and a double with its own precision.
Report SampleReport() {
  Report report({
      {"name", "name"},
      {"count", "count"},
      {"ratio", "ratio", 2},
      {.key = "derived", .heading = "text only", .text_only = true},
      {"machine_only", ""},
      {"note", "note"},
  });
  report.AddRow(std::move(report.NewRow()
                              .Set("name", std::string("alpha"))
                              .Set("count", int64_t{42})
                              .Set("ratio", 3.14159)
                              .Set("derived", std::string("TEXTONLYVALUE"))
                              .Set("machine_only", std::string("MACHINEVALUE"))
                              .Set("note", std::string("a,b"))));
  // A row sets its cells in any order; those it leaves unset are missing.
  report.AddRow(std::move(report.NewRow()
                              .Set("note", std::string("say \"hi\""))
                              .Set("machine_only", int64_t{-7})
                              .Set("name", std::string("beta"))));
  report.SetHeader({{"machine", {{"cores", 2}}}, {"build_type", "Test"}});
  return report;
}

TEST(ReportTest, JsonRowsHaveExactlyTheKeyedColumnsAndNullForMissing) {
  const nlohmann::json json = SampleReport().ToJson();
  EXPECT_EQ(json["header"]["build_type"], "Test");
  EXPECT_EQ(json["header"]["machine"]["cores"], 2);
  ASSERT_TRUE(json["rows"].is_array());
  ASSERT_EQ(json["rows"].size(), 2u);
  for (const nlohmann::json& row : json["rows"]) {
    ASSERT_TRUE(row.is_object());
    EXPECT_EQ(row.size(), 5u) << row.dump();
    for (const char* key : {"name", "count", "ratio", "machine_only", "note"}) EXPECT_TRUE(row.contains(key)) << key;
    EXPECT_FALSE(row.contains("derived")) << "a text-only column is not in JSON";
  }
  const nlohmann::json& first = json["rows"][0];
  EXPECT_EQ(first["name"], "alpha");
  EXPECT_EQ(first["count"], 42);
  EXPECT_TRUE(first["count"].is_number_integer());
  EXPECT_DOUBLE_EQ(first["ratio"].get<double>(), 3.14159);  // full precision, not the text's 2 digits
  EXPECT_EQ(first["machine_only"], "MACHINEVALUE");
  EXPECT_EQ(first["note"], "a,b");
  const nlohmann::json& second = json["rows"][1];
  EXPECT_TRUE(second["count"].is_null());
  EXPECT_TRUE(second["ratio"].is_null());
  EXPECT_EQ(second["machine_only"], -7);
  EXPECT_EQ(second["note"], "say \"hi\"");
  EXPECT_EQ(json.dump().find("TEXTONLYVALUE"), std::string::npos);
}

TEST(ReportTest, CsvHasTheKeyedHeaderAndQuotesCommasAndQuotes) {
  std::ostringstream out;
  SampleReport().WriteCsv(out);
  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 3u) << out.str();
  EXPECT_EQ(lines[0], "name,count,ratio,machine_only,note");
  EXPECT_EQ(lines[1], "alpha,42,3.14159,MACHINEVALUE,\"a,b\"");
  EXPECT_EQ(lines[2], "beta,,,-7,\"say \"\"hi\"\"\"");
}

TEST(ReportTest, CsvQuotesANewlineInsideAValue) {
  Report report(std::vector<Column>{{"k", "k"}});
  report.AddRow(std::move(report.NewRow().Set("k", std::string("two\nlines"))));
  std::ostringstream out;
  report.WriteCsv(out);
  EXPECT_EQ(out.str(), "k\n\"two\nlines\"\n");
}

TEST(ReportTest, TextShowsHeadingsAndDashForMissing) {
  std::ostringstream out;
  SampleReport().PrintText(out);
  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 3u) << out.str();
  for (const char* heading : {"name", "count", "ratio", "text only", "note"}) {
    EXPECT_NE(lines[0].find(heading), std::string::npos) << heading;
  }
  EXPECT_EQ(lines[0].find("machine_only"), std::string::npos);
  EXPECT_EQ(out.str().find("MACHINEVALUE"), std::string::npos) << "a machine-only column is not in the text";
  EXPECT_NE(lines[1].find("alpha"), std::string::npos);
  EXPECT_NE(lines[1].find("3.14"), std::string::npos);
  EXPECT_EQ(lines[1].find("3.141"), std::string::npos) << "ratio has precision 2";
  EXPECT_NE(lines[1].find("TEXTONLYVALUE"), std::string::npos);
  EXPECT_NE(lines[2].find("beta"), std::string::npos);
  EXPECT_NE(lines[2].find(" -"), std::string::npos) << lines[2];
  // Aligned: every line is as wide as the heading line.
  EXPECT_EQ(lines[1].size(), lines[0].size());
  EXPECT_EQ(lines[2].size(), lines[0].size());
}

// Estimates: a median with its interval, a ratio with interval and
// verdict, in every rendering; a row without one has nulls under the same keys.
Report EstimateReport() {
  Report report(std::vector<Column>{{"name", "name"},
                                    {"cpu_us", "CPU us", 1, ColumnKind::kMedian},
                                    {"cpu_vs_base", "vs base", 2, ColumnKind::kRatio}});
  report.AddRow(std::move(
      report.NewRow()
          .Set("name", std::string("a"))
          .Set("cpu_us", Estimate{.value = 200, .interval = Interval{190, 214}, .verdict = std::nullopt, .precise = true})
          .Set("cpu_vs_base",
               Estimate{.value = 0.5, .interval = Interval{0.48, 0.521}, .verdict = Verdict::kFaster, .precise = false})));
  report.AddRow(std::move(report.NewRow().Set("name", std::string("b"))));
  return report;
}

TEST(ReportTest, EstimatesCarryTheirIntervalAndVerdictInEveryRendering) {
  const nlohmann::json json = EstimateReport().ToJson();
  const nlohmann::json& a = json["rows"][0];
  EXPECT_DOUBLE_EQ(a["cpu_us"].get<double>(), 200);
  EXPECT_EQ(a["cpu_us_ci"], nlohmann::json::array({190.0, 214.0}));
  EXPECT_FALSE(a.contains("cpu_us_verdict")) << "a median has no verdict";
  EXPECT_DOUBLE_EQ(a["cpu_vs_base"].get<double>(), 0.5);
  EXPECT_EQ(a["cpu_vs_base_ci"], nlohmann::json::array({0.48, 0.521}));
  EXPECT_EQ(a["cpu_vs_base_verdict"], "faster");
  EXPECT_EQ(a["cpu_vs_base_precise"], false);
  const nlohmann::json& b = json["rows"][1];
  for (const char* key : {"cpu_us", "cpu_us_ci", "cpu_vs_base", "cpu_vs_base_ci", "cpu_vs_base_verdict"}) {
    ASSERT_TRUE(b.contains(key)) << key;
    EXPECT_TRUE(b[key].is_null()) << key;
  }
  std::ostringstream csv;
  EstimateReport().WriteCsv(csv);
  const std::vector<std::string> lines = Lines(csv.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "name,cpu_us,cpu_us_ci_low,cpu_us_ci_high,cpu_vs_base,cpu_vs_base_ci_low,cpu_vs_base_ci_high,cpu_vs_base_verdict");
  EXPECT_EQ(lines[1], "a,200,190,214,0.5,0.48,0.521,faster");
  EXPECT_EQ(lines[2], "b,,,,,,,");
  std::ostringstream text;
  EstimateReport().PrintText(text);
  const std::vector<std::string> shown = Lines(text.str());
  ASSERT_EQ(shown.size(), 3u);
  EXPECT_NE(shown[1].find("200.0 \u00b16.0%"), std::string::npos) << shown[1];  // (214 - 190) / 2 / 200
  EXPECT_NE(shown[1].find("0.500 [0.480, 0.521] faster*"), std::string::npos) << shown[1];
}

// A ratio as text: "POINT [LOW, HIGH] VERDICT", each number as printed.
struct ShownRatio {
  double point = 0, low = 0, high = 0;
  std::string text;
};
ShownRatio Shown(const Estimate& e, int precision) {
  ShownRatio s;
  s.text = TextOf(e, precision);
  std::istringstream in(s.text);
  char open = 0, comma = 0;
  in >> s.point >> open >> s.low >> comma >> s.high;
  EXPECT_TRUE(in && open == '[' && comma == ',') << s.text;
  return s;
}

// Rounded to fewer digits than its interval's ends, a point can look
// outside its own interval ("0.01 [0.015, 0.015]", "1.00 [1.001, 1.009]");
// printed to the same digits, as many as show three significant ones of the
// smallest, it never does, and a small ratio keeps its figures.
TEST(ReportTest, ARatioIsPrintedInsideItsIntervalWithItsSignificantDigits) {
  const Estimate ratios[] = {
      {.value = 0.015, .interval = Interval{0.015, 0.015}, .verdict = Verdict::kFaster},
      {.value = 0.00214, .interval = Interval{0.00213, 0.00215}, .verdict = Verdict::kFaster},
      {.value = 1.005, .interval = Interval{1.001, 1.009}, .verdict = Verdict::kSlower},
      {.value = 0.995, .interval = Interval{0.9915, 0.9985}, .verdict = Verdict::kFaster},
      {.value = 0.5, .interval = Interval{0.48, 0.521}, .verdict = Verdict::kFaster},
      {.value = 12.3456, .interval = Interval{12.3449, 12.3459}, .verdict = Verdict::kSlower},
  };
  for (const Estimate& e : ratios) {
    for (int precision : {1, 2, 3}) {
      const ShownRatio s = Shown(e, precision);
      EXPECT_LE(s.low, s.point) << s.text;
      EXPECT_LE(s.point, s.high) << s.text;
      // Three significant digits of the point at least: 0.015 is not "0.01".
      EXPECT_NEAR(s.point, e.value, 0.005 * e.value) << s.text;
    }
  }
  EXPECT_EQ(TextOf(Estimate{.value = 0.93, .interval = Interval{0.9106, 0.9504}, .verdict = Verdict::kFaster}, 2),
            "0.930 [0.911, 0.950] faster");
}

// An interval of values read off histogram buckets can be narrower than a
// bucket (zero wide where every round's median fell in one): such an
// estimate is marked in text after its interval, and says so in JSON.
TEST(ReportTest, AnIntervalOfBucketedValuesIsMarkedInTextAndJson) {
  Report report(std::vector<Column>{{"name", "name"},
                                    {"exit_us", "exit us", 1, ColumnKind::kMedian},
                                    {"exit_vs_base", "exit vs base", 2, ColumnKind::kRatio},
                                    {"cpu_vs_base", "CPU vs base", 2, ColumnKind::kRatio}});
  const Estimate flat{.value = 0.015, .interval = Interval{0.015, 0.015}, .verdict = Verdict::kFaster};
  Report::Row a = report.NewRow();
  a.Set("name", std::string("a"))
      .Set("exit_us", Bucketed(Estimate{.value = 2.6, .interval = Interval{2.6, 2.6}, .verdict = std::nullopt}))
      .Set("exit_vs_base", Bucketed(flat))
      .Set("cpu_vs_base", flat);
  report.AddRow(std::move(a));
  Report::Row b = report.NewRow();
  b.Set("name", std::string("b"))
      .Set("exit_us", Bucketed(std::monostate{}))
      .Set("exit_vs_base", Bucketed(Estimate{.value = 1.5, .interval = std::nullopt, .verdict = Verdict::kUndecided}))
      .Set("cpu_vs_base", 1.0);
  report.AddRow(std::move(b));
  std::ostringstream text;
  report.PrintText(text);
  const std::vector<std::string> lines = Lines(text.str());
  ASSERT_EQ(lines.size(), 3u) << text.str();
  const std::string mark(kBucketedMark);
  EXPECT_NE(lines[1].find("2.6 \u00b10.0%" + mark), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("0.0150 [0.0150, 0.0150]" + mark + " faster"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("0.0150 [0.0150, 0.0150] faster"), std::string::npos) << "the unmarked one: " << lines[1];
  EXPECT_EQ(lines[2].find(mark), std::string::npos) << "no interval, no mark: " << lines[2];
  const nlohmann::json json = report.ToJson();
  EXPECT_EQ(json["rows"][0]["exit_us_bucketed"], true);
  EXPECT_EQ(json["rows"][0]["exit_vs_base_bucketed"], true);
  EXPECT_EQ(json["rows"][0]["cpu_vs_base_bucketed"], false);
  EXPECT_TRUE(json["rows"][1]["exit_us_bucketed"].is_null()) << "a missing value has no estimate to mark";
  EXPECT_EQ(json["rows"][1]["exit_vs_base_bucketed"], true);
  EXPECT_TRUE(json["rows"][1]["cpu_vs_base_bucketed"].is_null()) << "a plain 1 is no estimate";
  EXPECT_EQ(BucketedLegend().rfind(mark + ": ", 0), 0u) << BucketedLegend();
  EXPECT_NE(BucketedLegend().find("1 %"), std::string::npos) << BucketedLegend();
}

TEST(ReportDeathTest, AKeyNotAColumnsOrSetTwiceIsABrokenInvariant) {
  Report report(std::vector<Column>{{"a", "a"}, {"b", "b"}});
  EXPECT_DEATH(report.NewRow().Set("c", int64_t{1}), "check failed");
  EXPECT_DEATH(report.NewRow().Set("a", int64_t{1}).Set("a", int64_t{2}), "check failed");
  Report other(std::vector<Column>{{"a", "a"}});
  EXPECT_DEATH(report.AddRow(other.NewRow()), "check failed");
}

TEST(ReportDeathTest, TwoColumnsWithOneKeyAreABrokenInvariant) {
  EXPECT_DEATH(Report(std::vector<Column>{{"a", "a"}, {"a", "again"}}), "check failed");
}

using ReportFileTest = test_util::TempDirTest;

TEST_F(ReportFileTest, WritesJsonAndCsvFilesThatReadBack) {
  const Report report = SampleReport();
  const std::string json_path = dir_ + "/out.json";
  const std::string csv_path = dir_ + "/out.csv";
  ASSERT_TRUE(report.WriteJsonFile(json_path).ok());
  ASSERT_TRUE(report.WriteCsvFile(csv_path).ok());
  std::ifstream json_in(json_path);
  EXPECT_EQ(nlohmann::json::parse(json_in), report.ToJson());
  std::ifstream csv_in(csv_path);
  std::ostringstream csv_file, csv_expected;
  csv_file << csv_in.rdbuf();
  report.WriteCsv(csv_expected);
  EXPECT_EQ(csv_file.str(), csv_expected.str());
}

TEST_F(ReportFileTest, UnwritablePathIsAnErrorNamingTheFile) {
  const std::string path = dir_ + "/no-such-dir/out.json";
  const absl::Status json = SampleReport().WriteJsonFile(path);
  EXPECT_FALSE(json.ok());
  EXPECT_FALSE(absl::IsInvalidArgument(json)) << "a run failure, not a usage error";
  EXPECT_NE(std::string(json.message()).find(path), std::string::npos) << json;
  const absl::Status csv = SampleReport().WriteCsvFile(path);
  EXPECT_FALSE(csv.ok());
  EXPECT_NE(std::string(csv.message()).find(path), std::string::npos) << csv;
}

// Probe defect 11 (2026-12-05): a write that failed (a full disk) left its
// truncated file, which passes for a result. Each writer leaves its file
// whole or not at all, and no temporary file beside it.
TEST_F(ReportFileTest, AWriteThatFailsOnAFullDiskLeavesNoFile) {
  if (geteuid() != 0) BACKENDLAB_SKIP(test_util::kNeedsRoot) << "a full disk here is a tmpfs mounted and filled";
  test_util::FullDisk full;
  const std::string dir = dir_ + "/full";
  if (const std::string why = full.Mount(dir); !why.empty()) BACKENDLAB_SKIP("a tmpfs mount") << why;
  const std::string big(1 << 20, 'x');
  const std::vector<std::pair<std::string, absl::Status>> writes = {
      {dir + "/text.svg", WriteTextFile(dir + "/text.svg", big)},
      {dir + "/streamed.folded", WriteTextFile(dir + "/streamed.folded",
                                               [&](std::ostream& out) {
                                                 for (int i = 0; i < 16; ++i) out << big;
                                               })},
      {dir + "/r.json", SampleReport().WriteJsonFile(dir + "/r.json")},
      {dir + "/r.csv", SampleReport().WriteCsvFile(dir + "/r.csv")},
  };
  for (const auto& [path, status] : writes) {
    EXPECT_FALSE(status.ok()) << path;
    EXPECT_NE(std::string(status.message()).find(path), std::string::npos) << status;
    EXPECT_NE(std::string(status.message()).find("No space left on device"), std::string::npos) << status;
  }
  EXPECT_EQ(full.Left(), std::vector<std::string>{});
}

// A write that fails part-way through leaves the file it was to replace as
// it was: the new text goes to a temporary file, renamed over it once whole.
TEST_F(ReportFileTest, AWriteThatFailsKeepsTheFileItWasToReplace) {
  const std::string path = dir_ + "/old.json";
  std::ofstream(path) << "the old run\n";
  const absl::Status s = WriteTextFile(path, [](std::ostream& out) {
    out << "half of the new";
    out.setstate(std::ios::badbit);  // as a failed write leaves the stream
  });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(test_util::ReadFile(path), "the old run\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1)
      << "a temporary file was left";
}

// What is not a regular file is written in place, never replaced: a device
// (/dev/null, /dev/stdout) or a pipe. A link to a file replaces the file it
// names and stays a link; a replaced file keeps its permissions.
TEST_F(ReportFileTest, WritesReplaceRegularFilesOnlyAndKeepLinksAndModes) {
  EXPECT_TRUE(WriteTextFile("/dev/null", "nothing\n").ok());
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
  const absl::Status full = WriteTextFile("/dev/full", "x");
  EXPECT_FALSE(full.ok());
  ASSERT_EQ(stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/full was replaced or removed";

  const std::string target = dir_ + "/target.json", link = dir_ + "/link.json";
  std::ofstream(target) << "old";
  chmod(target.c_str(), 0640);
  std::filesystem::create_symlink(target, link);
  ASSERT_TRUE(WriteTextFile(link, "new").ok());
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(test_util::ReadFile(target), "new");
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

// Output paths are checked before a run, and the check creates nothing.
class OutputPathsTest : public test_util::TempDirTest {
 protected:
  static constexpr FlagSpec kOutputSpecs[] = {{"json", "", ""},       {"csv", "", ""},   {"svg", "", ""},
                                              {"html", "", ""},       {"pprof", "", ""}, {"speedscope", "", ""},
                                              {"trace", "", ""},      {"out", "", ""}};
  absl::Status Check(std::vector<std::string> args) {
    absl::StatusOr<Flags> flags = Flags::Parse(args, kOutputSpecs);
    EXPECT_TRUE(flags.ok()) << flags.status();
    return flags.ok() ? CheckOutputPaths(*flags) : flags.status();
  }
  bool DirIsEmpty() const { return std::filesystem::is_empty(dir_); }
};

TEST_F(OutputPathsTest, WritablePathsPassAndNothingIsCreated) {
  EXPECT_TRUE(Check({}).ok());
  EXPECT_TRUE(Check({"--json=" + dir_ + "/a.json", "--csv=" + dir_ + "/a.csv", "--svg=" + dir_ + "/a.svg",
                     "--out=" + dir_ + "/profile"})
                  .ok());
  EXPECT_TRUE(DirIsEmpty()) << "the check must not leave files behind for a run that fails later";
  // An existing file is replaced; an existing directory is used for --out.
  std::ofstream(dir_ + "/old.json") << "{}";
  EXPECT_TRUE(Check({"--json=" + dir_ + "/old.json", "--out=" + dir_}).ok());
}

TEST_F(OutputPathsTest, UnwritablePathsAreRunFailuresNamingFlagAndPath) {
  std::filesystem::create_directory(dir_ + "/adir");
  std::ofstream(dir_ + "/afile") << "x";
  std::filesystem::create_directory(dir_ + "/readonly");
  chmod((dir_ + "/readonly").c_str(), 0500);
  const bool root = geteuid() == 0;  // root writes to read-only directories
  struct Case {
    std::string arg, flag;
  };
  std::vector<Case> cases = {
      {"--json=" + dir_ + "/no-such-dir/x.json", "--json"},
      {"--csv=" + dir_ + "/adir", "--csv"},
      {"--svg=" + dir_ + "/afile/x.svg", "--svg"},
      {"--out=" + dir_ + "/afile", "--out"},
      {"--out=" + dir_ + "/no-such-dir/profile", "--out"},
  };
  if (!root) cases.push_back({"--json=" + dir_ + "/readonly/x.json", "--json"});
  for (const Case& c : cases) {
    const absl::Status s = Check({c.arg});
    EXPECT_FALSE(s.ok()) << c.arg;
    EXPECT_FALSE(absl::IsInvalidArgument(s)) << c.arg << ": a run failure (exit 1), like a failed write";
    const std::string message(s.message());
    EXPECT_EQ(message.rfind(c.flag + "=", 0), 0u) << message;
    EXPECT_NE(message.find(c.arg.substr(c.flag.size() + 1)), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  chmod((dir_ + "/readonly").c_str(), 0700);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 3)
      << "nothing created";
}

// Probe defect 10: two outputs naming one file (`--json=out --html=out`)
// ran, and one output was lost. However the paths are spelt, that is a
// usage error naming both flags; distinct files pass.
TEST_F(OutputPathsTest, TwoOutputsNamingOneFileAreAUsageErrorNamingBoth) {
  std::filesystem::create_directory(dir_ + "/sub");
  std::ofstream(dir_ + "/real.json") << "{}";
  std::filesystem::create_symlink(dir_ + "/real.json", dir_ + "/link.json");
  struct Case {
    std::vector<std::string> args;
    std::string first, second;
  };
  const Case cases[] = {
      {{"--json=" + dir_ + "/out", "--html=" + dir_ + "/out"}, "--json", "--html"},
      {{"--pprof=" + dir_ + "/x", "--speedscope=" + dir_ + "/./x"}, "--pprof", "--speedscope"},
      {{"--trace=" + dir_ + "/sub/../t", "--svg=" + dir_ + "/t"}, "--svg", "--trace"},
      {{"--csv=" + dir_ + "/link.json", "--json=" + dir_ + "/real.json"}, "--json", "--csv"},
      {{"--json=" + dir_ + "/o", "--out=" + dir_ + "/o"}, "--json", "--out"},
  };
  for (const Case& c : cases) {
    const absl::Status s = Check(c.args);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.args[0] << " " << c.args[1] << ": " << s;
    const std::string message(s.message());
    EXPECT_NE(message.find(c.first), std::string::npos) << message;
    EXPECT_NE(message.find(c.second), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_TRUE(Check({"--json=" + dir_ + "/a", "--csv=" + dir_ + "/b", "--html=" + dir_ + "/sub/a"}).ok());
}

// --out's own files (diff's diff.svg) and a command's other files
// (calibrate's --backend-profile) may not be named by another output either.
TEST_F(OutputPathsTest, TheFilesOutGetsAndACommandsOwnFileFlagsAreCheckedToo) {
  constexpr std::string_view kOutFiles[] = {"diff.folded", "diff.svg"};
  constexpr FlagSpec kSpecs[] = {{"json", "", ""}, {"out", "", ""}, {"backend-profile", "", ""}};
  auto check = [&](std::vector<std::string> args, std::span<const std::string_view> file_flags) {
    absl::StatusOr<Flags> flags = Flags::Parse(args, kSpecs);
    EXPECT_TRUE(flags.ok()) << flags.status();
    return flags.ok() ? CheckOutputPaths(*flags, dir_ + "/default", kOutFiles, file_flags) : flags.status();
  };
  constexpr std::string_view kBackendProfile[] = {"backend-profile"};
  const absl::Status in_out = check({"--out=" + dir_ + "/d", "--json=" + dir_ + "/d/diff.svg"}, {});
  EXPECT_TRUE(absl::IsInvalidArgument(in_out)) << in_out;
  EXPECT_NE(in_out.message().find("(its diff.svg)"), std::string::npos) << in_out;
  const absl::Status in_default = check({"--json=" + dir_ + "/default/diff.folded"}, {});
  EXPECT_TRUE(absl::IsInvalidArgument(in_default)) << "--out left unsaid stands for its default: " << in_default;
  const absl::Status profile =
      check({"--json=" + dir_ + "/w.json", "--backend-profile=" + dir_ + "/w.json"}, kBackendProfile);
  EXPECT_TRUE(absl::IsInvalidArgument(profile)) << profile;
  EXPECT_NE(profile.message().find("--backend-profile"), std::string::npos) << profile;
  const absl::Status beside = check({"--out=" + dir_ + "/d", "--json=" + dir_ + "/d/summary.json"}, kBackendProfile);
  EXPECT_TRUE(beside.ok()) << beside;
  EXPECT_TRUE(DirIsEmpty());
}

TEST(FlagsTest, OneLineEscapesControlCharactersOnly) {
  EXPECT_EQ(OneLine("main;x\x07\x1b[31mred\n\tend \xc3\xa9\x7f"), "main;x\\x07\\x1b[31mred\\n\\tend \xc3\xa9\\x7f");
}

constexpr FlagSpec kSpecs[] = {
    {"size", "128MB,1GB", "sizes"},
    {"count", "15", "a count"},
    {"out", "", "an output file"},
    {"perf", "off", "an on/off flag"},
};

absl::StatusOr<Flags> Parse(std::vector<std::string> args) { return Flags::Parse(args, kSpecs); }

TEST(FlagsTest, ParsesGivenFlagsOverDefaults) {
  absl::StatusOr<Flags> flags = Parse({"--count=3", "--out=/tmp/x.json"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->Get("count"), "3");
  EXPECT_EQ(flags->Get("out"), "/tmp/x.json");
  EXPECT_EQ(flags->Get("size"), "128MB,1GB");  // default
  EXPECT_TRUE(flags->Has("size"));
  absl::StatusOr<std::vector<std::string>> sizes = flags->GetList("size");
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_EQ(*sizes, (std::vector<std::string>{"128MB", "1GB"}));
  absl::StatusOr<int64_t> count = flags->GetInt("count", 1, 1000);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 3);
}

TEST(FlagsTest, FlagWithoutDefaultIsAbsentUnlessGiven) {
  absl::StatusOr<Flags> flags = Parse({});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_FALSE(flags->Has("out"));
  EXPECT_EQ(flags->Get("out"), "");
  EXPECT_EQ(flags->Get("count"), "15");
}

TEST(FlagsTest, AnOnOffFlagAloneIsOn) {
  absl::StatusOr<Flags> flags = Parse({"--perf"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->Get("perf"), "on");
  EXPECT_EQ(Parse({})->Get("perf"), "off");
  EXPECT_EQ(Parse({"--perf=off"})->Get("perf"), "off");
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"--perf", "--perf=on"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"--perf=on", "--perf"}).status()));
}

TEST(FlagsTest, ValueMayContainEqualsSigns) {
  absl::StatusOr<Flags> flags = Parse({"--out=a=b"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->Get("out"), "a=b");
}

struct BadArgs {
  std::vector<std::string> args;
  const char* mention;  // the message must name this
};

TEST(FlagsTest, UsageErrorsAreInvalidArgumentNamingTheFlag) {
  const BadArgs kBad[] = {
      {{"--bogus=1"}, "--bogus"},            // unknown flag
      {{"--count"}, "--count"},              // missing '='
      {{"--count="}, "--count"},             // empty value
      {{"--count=1", "--count=2"}, "twice"},  // duplicate
      {{"count=1"}, "count=1"},              // positional
      {{"-count=1"}, "-count=1"},
      {{"--=1"}, "unknown flag"},
  };
  for (const BadArgs& b : kBad) {
    absl::StatusOr<Flags> flags = Parse(b.args);
    ASSERT_TRUE(absl::IsInvalidArgument(flags.status())) << b.args[0] << " gave " << flags.status();
    EXPECT_NE(std::string(flags.status().message()).find(b.mention), std::string::npos)
        << b.args[0] << ": " << flags.status();
  }
}

TEST(FlagsTest, GetListRejectsEmptyItems) {
  for (const char* value : {"a,,b", ",a", "a,", ","}) {
    absl::StatusOr<Flags> flags = Parse({std::string("--size=") + value});
    ASSERT_TRUE(flags.ok()) << flags.status();
    absl::StatusOr<std::vector<std::string>> list = flags->GetList("size");
    EXPECT_TRUE(absl::IsInvalidArgument(list.status())) << value;
    EXPECT_NE(std::string(list.status().message()).find("--size"), std::string::npos) << list.status();
  }
}

TEST(FlagsTest, GetIntRejectsNonNumbersAndValuesOutsideTheRange) {
  // A sign other than '-' and blanks around the digits are no whole
  // number either (absl::SimpleAtoi takes both).
  for (const char* value : {"0", "1001", "-1", "abc", "1.5", "3x", "99999999999999999999", "+5", " 5", "5 ", "-", "--1"}) {
    absl::StatusOr<Flags> flags = Parse({std::string("--count=") + value});
    ASSERT_TRUE(flags.ok()) << flags.status();
    absl::StatusOr<int64_t> count = flags->GetInt("count", 1, 1000);
    EXPECT_TRUE(absl::IsInvalidArgument(count.status())) << value << " gave " << count.status();
  }
  for (const char* value : {"1", "1000"}) {
    absl::StatusOr<Flags> flags = Parse({std::string("--count=") + value});
    ASSERT_TRUE(flags.ok());
    absl::StatusOr<int64_t> count = flags->GetInt("count", 1, 1000);
    ASSERT_TRUE(count.ok()) << value << ": " << count.status();
    EXPECT_EQ(*count, std::stoll(value));
  }
}

TEST(FlagsTest, GetListRejectsRepeatedItems) {
  for (const char* value : {"a,a", "a,b,a", "1GB,2GB,1GB"}) {
    absl::StatusOr<Flags> flags = Parse({std::string("--size=") + value});
    ASSERT_TRUE(flags.ok()) << flags.status();
    absl::StatusOr<std::vector<std::string>> list = flags->GetList("size");
    EXPECT_TRUE(absl::IsInvalidArgument(list.status())) << value;
    EXPECT_NE(std::string(list.status().message()).find("twice"), std::string::npos) << list.status();
  }
}

TEST(FlagsTest, GetBoolTakesOnAndOffOnly) {
  EXPECT_EQ(Parse({"--perf=on"})->GetBool("perf").value_or(false), true);
  EXPECT_EQ(Parse({"--perf=off"})->GetBool("perf").value_or(true), false);
  EXPECT_EQ(Parse({"--perf"})->GetBool("perf").value_or(false), true);
  for (const char* value : {"true", "false", "1", "0", "yes", "ON"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(Parse({std::string("--perf=") + value})->GetBool("perf").status())) << value;
  }
}

// A control character in what the user typed is quoted escaped, so that an
// error stays one line (defect 11: a newline gave a two-line error).
TEST(FlagsTest, ErrorsQuoteUserInputEscapedOnOneLine) {
  const std::vector<absl::Status> errors = {
      Parse({"line\nbreak"}).status(),
      Parse({"--bo\ngus=1"}).status(),
      Parse({"--count=1\n2"})->GetInt("count", 1, 10).status(),
      Parse({"--perf=o\rn"})->GetBool("perf").status(),
      Parse({"--size=a\tb,a\tb"})->GetList("size").status(),
  };
  for (const absl::Status& s : errors) {
    const std::string message(s.message());
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_EQ(message.find_first_of("\n\r\t"), std::string::npos) << message;
  }
  EXPECT_NE(std::string(errors[2].message()).find("'1\\n2'"), std::string::npos) << errors[2];
  EXPECT_EQ(Quoted("a\nb'c"), "'a\\nb\\'c'");
}

TEST(FlagsTest, HelpListsEveryFlagWithItsDefault) {
  const std::string help = FlagsHelp(kSpecs);
  EXPECT_NE(help.find("--size=128MB,1GB"), std::string::npos) << help;
  EXPECT_NE(help.find("--count=15"), std::string::npos) << help;
  EXPECT_NE(help.find("--out="), std::string::npos) << help;
  EXPECT_NE(help.find("an output file"), std::string::npos) << help;
  EXPECT_EQ(Lines(help).size(), std::size(kSpecs));
}

}  // namespace
}  // namespace backendlab::tools
