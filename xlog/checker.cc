// The checker's verdicts and its choice of record sizes.
#include "xlog/checker.h"

namespace backendlab::xlog {

std::string_view ReadVerdictName(ReadVerdict verdict) {
  switch (verdict) {
    case ReadVerdict::kOk: return "ok";
    case ReadVerdict::kWentBackwards: return "went backwards";
    case ReadVerdict::kBehindCompleted: return "behind a finished important insert";
    case ReadVerdict::kNotImportant: return "not the start of an important record";
  }
  return "?";
}

ReadVerdict JudgeRead(Lsn previous, Lsn floor, Lsn value) {
  if (value < previous) return ReadVerdict::kWentBackwards;
  if (value < floor) return ReadVerdict::kBehindCompleted;
  return ReadVerdict::kOk;
}

uint64_t CheckerHash(uint64_t x) {
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

uint32_t CheckerRecordSize(uint64_t hash) {
  if (hash % 64 == 0) return 8192;
  return (hash >> 6) % 2 == 0 ? 32 : 200;
}

}  // namespace backendlab::xlog
