// The backend weight profile's file format: strict parsing, stable writing.
#include "lifecycle/backend_weight.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace backendlab::lifecycle {
namespace {

constexpr char kFormat[] = "backendlab backend profile 1";

// Bounds that no real backend comes near: a value past one is a typo or a
// broken fit, and would make every backend of a run crawl.
constexpr int64_t kMaxPages = 1'000'000;          // 4 GB of 4 kB pages
constexpr int64_t kMaxFileBytes = int64_t{1} << 30;
constexpr int64_t kMaxCallsPerKind = 1'000'000;
constexpr double kMaxCpuUs = 10'000'000;          // 10 s
constexpr int64_t kMaxRandomBytes = 1 << 20;
constexpr size_t kMaxLibraries = 256;

absl::Status Bad(const std::string& key, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("backend profile: ", key, ": ", why));
}

std::string Shown(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// An object whose keys are all in `known`.
absl::Status OnlyKeys(const nlohmann::json& j, const std::string& where, std::initializer_list<std::string_view> known) {
  if (!j.is_object()) return Bad(where.empty() ? "(top level)" : where, absl::StrCat("must be an object, not ", Shown(j)));
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (std::string_view k : known) absl::StrAppend(&list, list.empty() ? "" : ", ", std::string(k));
      return Bad(where.empty() ? key : absl::StrCat(where, ".", key), absl::StrCat("unknown key (expected ", list, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status GetCount(const nlohmann::json& j, const std::string& key, int64_t max, int64_t& out) {
  if (!j.is_number_integer()) return Bad(key, absl::StrCat(Shown(j), " is not a whole number"));
  const int64_t v = j.get<int64_t>();
  if (v < 0) return Bad(key, absl::StrCat(v, " is negative"));
  if (v > max) return Bad(key, absl::StrCat(v, " is absurd (at most ", max, ")"));
  out = v;
  return absl::OkStatus();
}

absl::Status ParsePhase(const nlohmann::json& j, const std::string& where, PhaseWeight& w) {
  if (absl::Status s = OnlyKeys(j, where, {"touch_pages", "read_file_bytes", "syscalls", "cpu_us"}); !s.ok()) return s;
  if (j.contains("touch_pages")) {
    if (absl::Status s = GetCount(j["touch_pages"], where + ".touch_pages", kMaxPages, w.touch_pages); !s.ok()) return s;
  }
  if (j.contains("read_file_bytes")) {
    if (absl::Status s = GetCount(j["read_file_bytes"], where + ".read_file_bytes", kMaxFileBytes, w.read_file_bytes);
        !s.ok()) {
      return s;
    }
  }
  if (j.contains("cpu_us")) {
    const nlohmann::json& c = j["cpu_us"];
    const std::string key = where + ".cpu_us";
    if (!c.is_number()) return Bad(key, absl::StrCat(Shown(c), " is not a number"));
    const double v = c.get<double>();
    if (!std::isfinite(v) || v < 0) return Bad(key, absl::StrCat(Shown(c), " is negative or not finite"));
    if (v > kMaxCpuUs) return Bad(key, absl::StrCat(Shown(c), " is absurd (at most ", kMaxCpuUs, ")"));
    w.cpu_us = v;
  }
  if (j.contains("syscalls")) {
    const nlohmann::json& calls = j["syscalls"];
    const std::string where_calls = where + ".syscalls";
    if (!calls.is_object()) return Bad(where_calls, absl::StrCat("must be an object, not ", Shown(calls)));
    for (const auto& [kind, count] : calls.items()) {
      const std::string key = absl::StrCat(where_calls, ".", kind);
      if (std::find(std::begin(kWeightSyscalls), std::end(kWeightSyscalls), kind) == std::end(kWeightSyscalls)) {
        std::string list;
        for (std::string_view k : kWeightSyscalls) absl::StrAppend(&list, list.empty() ? "" : ", ", std::string(k));
        return Bad(key, absl::StrCat("not a system call a weight can make (", list, ")"));
      }
      int64_t n = 0;
      if (absl::Status s = GetCount(count, key, kMaxCallsPerKind, n); !s.ok()) return s;
      if (n > 0) w.syscalls[kind] = n;
    }
  }
  return absl::OkStatus();
}

nlohmann::json PhaseJson(const PhaseWeight& w) {
  nlohmann::json calls = nlohmann::json::object();
  for (const auto& [kind, n] : w.syscalls) calls[kind] = n;
  return {{"touch_pages", w.touch_pages}, {"read_file_bytes", w.read_file_bytes}, {"syscalls", calls}, {"cpu_us", w.cpu_us}};
}

}  // namespace

absl::StatusOr<BackendWeight> ParseBackendWeight(std::string_view json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("backend profile: not valid JSON");
  if (absl::Status s = OnlyKeys(j, "", {"format", "postmaster", "startup", "work", "exit", "exit_path", "fitted"}); !s.ok()) {
    return s;
  }
  if (!j.contains("format") || j["format"] != kFormat) {
    return Bad("format", absl::StrCat("must be \"", kFormat, "\"", j.contains("format") ? ", not " + Shown(j["format"]) : ""));
  }
  BackendWeight w;
  if (j.contains("postmaster")) {
    const nlohmann::json& p = j["postmaster"];
    if (absl::Status s = OnlyKeys(p, "postmaster", {"touch_pages", "libraries", "random_bytes_per_fork"}); !s.ok()) return s;
    if (p.contains("touch_pages")) {
      if (absl::Status s = GetCount(p["touch_pages"], "postmaster.touch_pages", kMaxPages, w.postmaster_touch_pages);
          !s.ok()) {
        return s;
      }
    }
    if (p.contains("random_bytes_per_fork")) {
      if (absl::Status s =
              GetCount(p["random_bytes_per_fork"], "postmaster.random_bytes_per_fork", kMaxRandomBytes, w.random_bytes_per_fork);
          !s.ok()) {
        return s;
      }
    }
    if (p.contains("libraries")) {
      const nlohmann::json& libs = p["libraries"];
      if (!libs.is_array()) return Bad("postmaster.libraries", absl::StrCat("must be a list of names, not ", Shown(libs)));
      if (libs.size() > kMaxLibraries) return Bad("postmaster.libraries", absl::StrCat(libs.size(), " libraries is absurd"));
      for (const nlohmann::json& lib : libs) {
        if (!lib.is_string() || lib.get<std::string>().empty()) {
          return Bad("postmaster.libraries", absl::StrCat(Shown(lib), " is not a library name"));
        }
        w.libraries.push_back(lib.get<std::string>());
      }
    }
  }
  for (auto [key, phase] : {std::pair<const char*, PhaseWeight*>{"startup", &w.startup}, {"work", &w.work}, {"exit", &w.exit}}) {
    if (!j.contains(key)) continue;
    if (absl::Status s = ParsePhase(j[key], key, *phase); !s.ok()) return s;
  }
  if (j.contains("exit_path")) {
    const nlohmann::json& e = j["exit_path"];
    absl::StatusOr<ExitPath> path = e.is_string() ? ParseName(e.get<std::string>(), kExitPathNames, "exit path")
                                                  : absl::StatusOr<ExitPath>(absl::InvalidArgumentError("not a string"));
    if (!path.ok()) return Bad("exit_path", absl::StrCat(Shown(e), " is not _exit or exit"));
    w.exit_path = *path;
  }
  if (w.random_bytes_per_fork > 0 &&
      std::none_of(w.libraries.begin(), w.libraries.end(), [](const std::string& l) { return l.find("libcrypto") != std::string::npos; })) {
    return Bad("postmaster.random_bytes_per_fork", "needs libcrypto among postmaster.libraries (RAND_bytes is OpenSSL's)");
  }
  if (j.contains("fitted")) w.fitted = j["fitted"];
  return w;
}

absl::StatusOr<BackendWeight> LoadBackendWeight(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("backend profile: cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<BackendWeight> w = ParseBackendWeight(text.str());
  if (!w.ok()) return absl::InvalidArgumentError(absl::StrCat(w.status().message(), " (in ", path, ")"));
  return w;
}

nlohmann::json BackendWeightToJson(const BackendWeight& w) {
  nlohmann::json j = nlohmann::json::object();
  j["format"] = kFormat;
  j["postmaster"] = {{"touch_pages", w.postmaster_touch_pages},
                     {"libraries", w.libraries},
                     {"random_bytes_per_fork", w.random_bytes_per_fork}};
  j["startup"] = PhaseJson(w.startup);
  j["work"] = PhaseJson(w.work);
  j["exit"] = PhaseJson(w.exit);
  j["exit_path"] = NameOf(w.exit_path, kExitPathNames);
  j["fitted"] = w.fitted;
  return j;
}

}  // namespace backendlab::lifecycle
