// `backendlab coverage-study`: flags -> base::StudyCoverage per noise and
// true ratio -> the table and the JSON/CSV files. With --rounds-of, the
// noises are a compare run's own paired rounds, read from its JSON.
#include "tools/coverage_command.h"

#include <cmath>
#include <fstream>
#include <map>
#include <tuple>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/coverage_study.h"
#include "nlohmann/json.hpp"
#include "tools/flags.h"
#include "tools/machine_header.h"
#include "tools/report.h"

namespace backendlab::tools {
namespace {

constexpr FlagSpec kCoverageFlags[] = {
    {"runs", "2000", "simulated runs per row"},
    {"rounds", "10000", "each run's most rounds, and so its looks (as compare's --rounds, whose default this is)"},
    {"same-within", "2%", "the same band (as compare's), between 0 and 50 %"},
    {"sd", "5%", "the standard deviation of a round's log ratio in the normal and t rows"},
    {"rounds-of", "", "also rows whose rounds are a compare run's own (its JSON): each cost and rate ratio with at least 96 rounds, its paired log ratios resampled"},
    {"seed", "1", "seed of the simulated rounds"},
    {"json", "", "also write the rows as JSON to this file"},
    {"csv", "", "also write the rows as CSV to this file"},
};

// The smallest a real run's series may be to stand for its noise.
constexpr size_t kMinResampledRounds = 96;

struct Noise {
  std::string name;
  RoundNoise draw;
};

absl::StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--rounds-of: cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every cost and rate ratio to the baseline of a compare run with enough
// rounds: the row's log ratio to its baseline's in each round they share.
absl::StatusOr<std::vector<Noise>> NoisesOf(const std::string& path) {
  absl::StatusOr<std::string> text = ReadAll(path);
  if (!text.ok()) return text.status();
  const nlohmann::json run = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (run.is_discarded() || !run.is_object() || !run.contains("header") || !run.contains("rows") ||
      run["header"].value("command", "") != "compare" || run["header"].value("baseline", "").empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--rounds-of: ", path, " is not the JSON of a compare run"));
  }
  const std::string baseline = run["header"]["baseline"];
  // The baseline's row at each shared_buffers, clients, hold and mode.
  using Place = std::tuple<int64_t, int64_t, int64_t, std::string>;
  std::map<Place, const nlohmann::json*> bases;
  auto place = [](const nlohmann::json& row) {
    return Place{row.value("shared_buffers_bytes", int64_t{0}), row.value("clients", int64_t{1}),
                 row.value("hold", int64_t{0}), row.value("mode", "")};
  };
  for (const nlohmann::json& row : run["rows"]) {
    if (row.value("config", "") == baseline && !row.value("aa", false)) bases[place(row)] = &row;
  }
  std::vector<Noise> noises;
  for (const nlohmann::json& row : run["rows"]) {
    const auto base = bases.find(place(row));
    if (base == bases.end() || base->second == &row) continue;
    for (const char* figure : {"rounds_server_cpu_us", "rounds_connections_per_second"}) {
      if (!row.contains(figure) || !base->second->contains(figure)) continue;
      const nlohmann::json& a = row[figure];
      const nlohmann::json& b = (*base->second)[figure];
      std::vector<double> logs;
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        if (!a[i].is_number() || !b[i].is_number()) continue;
        const double x = a[i].get<double>(), y = b[i].get<double>();
        if (x > 0 && y > 0) logs.push_back(std::log(x / y));
      }
      if (logs.size() < kMinResampledRounds) continue;
      noises.push_back({absl::StrCat(row.value("config", ""), " at ",
                                     row.value("shared_buffers", ""), std::string_view(figure) == "rounds_server_cpu_us" ? " CPU" : " conn/s",
                                     " (", logs.size(), " rounds)"),
                        ResampledNoise(std::move(logs))});
    }
  }
  if (noises.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--rounds-of: ", path, " has no ratio with ", kMinResampledRounds,
                                                   " rounds or more to resample"));
  }
  return noises;
}

}  // namespace

std::string CoverageUsage() {
  return absl::StrCat(
      "usage: backendlab coverage-study [flags]\n"
      "Simulated runs of paired rounds, each stopped as compare and pg stop (at the first look\n"
      "where its ratio is decided, else at the last), read at the per-look level the tool uses:\n"
      "how often the interval at the stop holds the true ratio, and which verdicts were given.\n"
      "Rows: normal and heavy-tailed (t, 3 df) rounds with no difference and with a difference\n"
      "of the band itself; with --rounds-of, a real run's rounds resampled. Beside each, the same\n"
      "rounds read at 95 % at every look (the optional stopping the per-look level corrects).\n\n",
      FlagsHelp(kCoverageFlags));
}

absl::Status RunCoverageCommand(std::span<const std::string> args, std::ostream& out) {
  absl::StatusOr<Flags> flags = Flags::Parse(args, kCoverageFlags);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<int64_t> runs = flags->GetInt("runs", 10, 1'000'000);
  if (!runs.ok()) return runs.status();
  absl::StatusOr<int64_t> rounds = flags->GetInt("rounds", 6, 10'000);
  if (!rounds.ok()) return rounds.status();
  absl::StatusOr<double> band = flags->GetPercent("same-within", 0, 50);
  if (!band.ok()) return band.status();
  absl::StatusOr<double> sd = flags->GetPercent("sd", 0, 100);
  if (!sd.ok()) return sd.status();
  absl::StatusOr<int64_t> seed = flags->GetInt("seed", 0, INT64_MAX);
  if (!seed.ok()) return seed.status();
  if (absl::Status s = CheckOutputPaths(*flags); !s.ok()) return s;
  std::vector<Noise> noises = {{absl::StrFormat("normal, sd %g %%", 100 * *sd), NormalNoise(*sd)},
                               {absl::StrFormat("t 3 df, sd %g %%", 100 * *sd), StudentNoise(3, *sd)}};
  if (flags->Has("rounds-of")) {
    absl::StatusOr<std::vector<Noise>> of = NoisesOf(flags->Get("rounds-of"));
    if (!of.ok()) return of.status();
    for (Noise& n : *of) noises.push_back(std::move(n));
  }

  Report report({
      {"noise", "rounds' noise"},
      {"true_ratio", "true ratio", 3},
      {"runs", "runs"},
      {"covered_percent", "covered %", 1},
      {"faster", "faster"},
      {"slower", "slower"},
      {"same", "same"},
      {"undecided", "~"},
      {"mean_rounds", "mean rounds", 0},
      {"covered_naive_percent", "95 %/look: covered %", 1},
      {"apart_naive", "apart"},
      {"same_naive", "same"},
  });
  for (const Noise& noise : noises) {
    for (const double truth : {1.0, 1 + *band}) {
      CoverageStudyOptions o;
      o.max_rounds = *rounds;
      o.same_within = *band;
      o.true_ratio = truth;
      o.runs = static_cast<int>(*runs);
      o.seed = static_cast<uint64_t>(*seed);
      o.noise = noise.draw;
      const CoverageStudyResult r = StudyCoverage(o);
      Report::Row row = report.NewRow();
      row.Set("noise", noise.name)
          .Set("true_ratio", truth)
          .Set("runs", static_cast<int64_t>(r.runs))
          .Set("covered_percent", 100.0 * r.covered / r.runs)
          .Set("faster", static_cast<int64_t>(r.faster))
          .Set("slower", static_cast<int64_t>(r.slower))
          .Set("same", static_cast<int64_t>(r.same))
          .Set("undecided", static_cast<int64_t>(r.undecided))
          .Set("mean_rounds", r.mean_rounds)
          .Set("covered_naive_percent", 100.0 * r.covered_naive / r.runs)
          .Set("apart_naive", static_cast<int64_t>(r.apart_naive))
          .Set("same_naive", static_cast<int64_t>(r.same_naive));
      report.AddRow(std::move(row));
    }
  }
  const std::vector<int64_t> looks = LookRounds(*rounds);
  const double level = PerLookConfidence(looks);  // every row's, remembered from its first study
  nlohmann::json header = MachineHeader();
  header["command"] = "coverage-study";
  header["runs"] = *runs;
  header["looks"] = looks;
  header["same_within_percent"] = 100 * *band;
  header["sd_percent"] = 100 * *sd;
  header["seed"] = *seed;
  header["confidence_per_look"] = level;
  if (flags->Has("rounds-of")) header["rounds_of"] = flags->Get("rounds-of");
  report.SetHeader(header);

  out << absl::StrFormat(
      "backendlab coverage-study: %d simulated runs per row, looks at %d of up to %d rounds, each run stopped at its "
      "first decided look; intervals at %.4f %% per look\n\n",
      *runs, looks.size(), *rounds, 100 * level);
  report.PrintText(out);
  out << "\ncovered %: runs whose interval at the stop holds the true ratio (95 % promised);\n"
         "faster, slower, same, ~: the verdicts at the stop, of a cost whose true ratio is the row's. At 1 any\n"
         "  faster or slower is wrong (at most 5 % together); at 1 + the band, same is wrong (at most 2.5 %).\n"
         "95 %/look: the same rounds read at 95 % at every look and stopped the same way.\n"
         "The rounds are independent draws: a drift over several rounds is not in them (tools/aa-study).\n";
  return report.WriteFiles(flags->Get("json"), flags->Get("csv"));
}

}  // namespace backendlab::tools
