// pprof, speedscope and Chrome trace writers.
#include "profiling/exports.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "nlohmann/json.hpp"

namespace backendlab::profiling {
namespace {

// A process root and, if the next frame is "[phase]", that phase; the
// frames after them.
struct Labeled {
  std::string_view process;
  std::string_view phase;
  std::vector<std::string_view> frames;  // root first
};

Labeled Split(std::string_view stack) {
  std::vector<std::string_view> frames = SplitFrames(stack);
  Labeled l;
  l.process = frames.front();
  size_t first = 1;
  if (frames.size() > 1 && frames[1].size() >= 2 && frames[1].front() == '[' && frames[1].back() == ']') {
    l.phase = frames[1].substr(1, frames[1].size() - 2);
    first = 2;
  }
  l.frames.assign(frames.begin() + static_cast<ptrdiff_t>(first), frames.end());
  return l;
}

std::string RoleOf(const ExportInput& input, std::string_view process) {
  return input.role ? input.role(process) : std::string(process);
}

// Protocol buffers' wire format, as much of it as profile.proto needs.
class Message {
 public:
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<char>(v));
  }
  // A varint field; zero is the default and is left out, as protobuf does.
  void Int(int field, uint64_t v) {
    if (v == 0) return;
    Varint(static_cast<uint64_t>(field) << 3);
    Varint(v);
  }
  void Bytes(int field, std::string_view b) {
    Varint((static_cast<uint64_t>(field) << 3) | 2);
    Varint(b.size());
    bytes_.append(b);
  }
  void Sub(int field, const Message& m) { Bytes(field, m.bytes_); }
  // A packed repeated varint field.
  void Packed(int field, const std::vector<uint64_t>& values) {
    Message inner;
    for (uint64_t v : values) inner.Varint(v);
    Bytes(field, inner.bytes_);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class StringTable {
 public:
  StringTable() { Index(""); }  // string_table[0] must be ""
  uint64_t Index(std::string_view s) {
    auto [it, added] = index_.emplace(std::string(s), strings_.size());
    if (added) strings_.push_back(std::string(s));
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, uint64_t> index_;
  std::vector<std::string> strings_;
};

std::string Gzip(const std::string& raw) {
  z_stream zs{};
  // 15 + 16: a gzip wrapper, as pprof writes and reads.
  BACKENDLAB_CHECK(deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, raw.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  BACKENDLAB_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace

std::string ToPprofGzip(const ExportInput& input) {
  StringTable strings;
  Message profile;
  auto value_type = [&](std::string_view type, std::string_view unit) {
    Message v;
    v.Int(1, strings.Index(type));
    v.Int(2, strings.Index(unit));
    return v;
  };
  profile.Sub(1, value_type("samples", "count"));
  profile.Sub(1, value_type("cpu", "nanoseconds"));
  // One function and one location per frame name, ids from 1.
  std::map<std::string, uint64_t> ids;
  auto id_of = [&](std::string_view name) {
    auto [it, added] = ids.emplace(std::string(name), ids.size() + 1);
    return it->second;
  };
  const uint64_t profile_key = strings.Index("profile"), phase_key = strings.Index("phase"),
                 process_key = strings.Index("process"), role_key = strings.Index("role");
  int64_t total_ns = 0;
  for (const ExportSource& source : input.sources) {
    for (const auto& [stack, count] : source.labeled->stacks()) {
      const Labeled l = Split(stack);
      Message sample;
      std::vector<uint64_t> locations;
      for (auto it = l.frames.rbegin(); it != l.frames.rend(); ++it) locations.push_back(id_of(*it));  // leaf first
      if (locations.empty()) locations.push_back(id_of(absl::StrCat("[", std::string(l.process), "]")));  // a process's own samples
      sample.Packed(1, locations);
      sample.Packed(2, {static_cast<uint64_t>(count), static_cast<uint64_t>(count * source.period_ns)});
      auto label = [&](uint64_t key, std::string_view value) {
        Message m;
        m.Int(1, key);
        m.Int(2, strings.Index(value));
        sample.Sub(3, m);
      };
      label(profile_key, source.name);
      if (!l.phase.empty()) label(phase_key, l.phase);
      label(process_key, l.process);
      label(role_key, RoleOf(input, l.process));
      profile.Sub(2, sample);
      total_ns += count * source.period_ns;
    }
  }
  for (const auto& [name, id] : ids) {
    Message line;
    line.Int(1, id);
    Message location;
    location.Int(1, id);
    location.Sub(4, line);
    profile.Sub(4, location);
  }
  for (const auto& [name, id] : ids) {
    Message function;
    function.Int(1, id);
    function.Int(2, strings.Index(name));
    function.Int(3, strings.Index(name));
    profile.Sub(5, function);
  }
  // The string table last: every string above is in it by now.
  for (const std::string& s : strings.strings()) profile.Bytes(6, s);
  profile.Int(10, static_cast<uint64_t>(total_ns));  // duration_nanos: the sampled time
  profile.Sub(11, value_type("cpu", "nanoseconds"));
  profile.Int(12, static_cast<uint64_t>(input.sources.empty() ? 0 : input.sources.front().period_ns));
  return Gzip(profile.bytes());
}

std::string ToSpeedscopeJson(const ExportInput& input) {
  nlohmann::json frames = nlohmann::json::array();
  std::map<std::string, size_t> frame_index;
  auto index_of = [&](std::string_view name) {
    auto [it, added] = frame_index.emplace(std::string(name), frames.size());
    if (added) frames.push_back({{"name", std::string(name)}});
    return it->second;
  };
  struct Profile {
    nlohmann::json samples = nlohmann::json::array();
    nlohmann::json weights = nlohmann::json::array();
    int64_t total = 0;
  };
  nlohmann::json profiles = nlohmann::json::array();
  for (const ExportSource& source : input.sources) {
    std::map<std::string, Profile> by_role;
    for (const auto& [stack, count] : source.labeled->stacks()) {
      const Labeled l = Split(stack);
      Profile& p = by_role[RoleOf(input, l.process)];
      nlohmann::json sample = nlohmann::json::array();
      sample.push_back(index_of(l.process));
      if (!l.phase.empty()) sample.push_back(index_of(absl::StrCat("[", std::string(l.phase), "]")));
      for (std::string_view f : l.frames) sample.push_back(index_of(f));
      p.samples.push_back(std::move(sample));
      p.weights.push_back(count * source.period_ns);
      p.total += count * source.period_ns;
    }
    for (auto& [role, p] : by_role) {
      profiles.push_back({{"type", "sampled"},
                          {"name", absl::StrCat(source.name, ": ", role)},
                          {"unit", "nanoseconds"},
                          {"startValue", 0},
                          {"endValue", p.total},
                          {"samples", std::move(p.samples)},
                          {"weights", std::move(p.weights)}});
    }
  }
  const nlohmann::json file = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                               {"shared", {{"frames", std::move(frames)}}},
                               {"profiles", std::move(profiles)},
                               {"name", input.title},
                               {"activeProfileIndex", 0},
                               {"exporter", "backendlab"}};
  return file.dump() + "\n";
}

std::string ToChromeTraceJson(const std::vector<TraceSpan>& spans, std::string_view title) {
  int64_t origin = spans.empty() ? 0 : spans.front().start_ns;
  for (const TraceSpan& s : spans) origin = std::min(origin, s.start_ns);
  nlohmann::json events = nlohmann::json::array();
  std::map<int64_t, std::string> tracks;
  for (const TraceSpan& s : spans) tracks.emplace(s.pid, s.process);
  for (const auto& [pid, name] : tracks) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", pid}, {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", pid}, {"args", {{"name", name}}}});
  }
  for (const TraceSpan& s : spans) {
    events.push_back({{"name", s.name},
                      {"cat", s.category},
                      {"ph", "X"},
                      {"ts", static_cast<double>(s.start_ns - origin) / 1e3},
                      {"dur", static_cast<double>(s.duration_ns) / 1e3},
                      {"pid", s.pid},
                      {"tid", s.pid}});
  }
  const nlohmann::json trace = {{"traceEvents", std::move(events)},
                                {"displayTimeUnit", "ms"},
                                {"otherData", {{"title", std::string(title)}, {"exporter", "backendlab"}}}};
  return trace.dump() + "\n";
}

}  // namespace backendlab::profiling
