// A linearisability-style checker for a way of tracking the last important
// LSN: several inserters and a reader that reads flat out, every read judged
// against what had finished before it began, and the final value against
// everything that was inserted.
#ifndef BACKENDLAB_XLOG_CHECKER_H_
#define BACKENDLAB_XLOG_CHECKER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "xlog/last_important.h"
#include "xlog/wal.h"

namespace backendlab::xlog {

struct CheckOptions {
  int workers = 3;
  int64_t inserts = 10'000'000;  // over all workers
  int locks = kPostgresInsertLocks;
  int unimportant_percent = 10;
  int64_t holding_all_every = 4096;  // one insert in this many of each worker takes every lock
  uint64_t seed = 1;
};

struct CheckResult {
  int64_t inserts = 0;
  int64_t important = 0;
  int64_t holding_all = 0;
  int64_t reads = 0;
  int64_t violations = 0;
  std::string first_violation;  // "" when there was none
  bool ok() const { return violations == 0; }
};

// What one read may not be (xlog/README.md, invariants 1-4).
enum class ReadVerdict {
  kOk,
  kWentBackwards,    // below an earlier read of the same reader
  kBehindCompleted,  // below an important insert that had finished before the read began
  kNotImportant,     // neither invalid nor the start of an important record
};
std::string_view ReadVerdictName(ReadVerdict verdict);

// Invariants 1 and 2 for one read: `previous` is the reader's last value,
// `floor` the largest important start whose insert had finished before the
// read began.
ReadVerdict JudgeRead(Lsn previous, Lsn floor, Lsn value);

// The record sizes the checker inserts, one in 64 of them 8 kB: enough
// variety that inserters holding different locks finish out of order.
uint32_t CheckerRecordSize(uint64_t hash);
// A mixing function for the checker's choices (splitmix64's finaliser).
uint64_t CheckerHash(uint64_t x);

namespace internal {

// Important record starts, a bit per 8 bytes of WAL, set by each inserter
// after its insert returns (so before it publishes the insert as finished).
class StartBitmap {
 public:
  explicit StartBitmap(Lsn end) : words_(end / kRecordAlign / 64 + 1) {}
  void Set(Lsn lsn) { words_[Index(lsn)].fetch_or(Bit(lsn), std::memory_order_relaxed); }
  bool Has(Lsn lsn) const {
    return lsn % kRecordAlign == 0 && Index(lsn) < words_.size() &&
           (words_[Index(lsn)].load(std::memory_order_relaxed) & Bit(lsn)) != 0;
  }

 private:
  static size_t Index(Lsn lsn) { return static_cast<size_t>(lsn / kRecordAlign / 64); }
  static uint64_t Bit(Lsn lsn) { return uint64_t{1} << (lsn / kRecordAlign % 64); }
  std::vector<std::atomic<uint64_t>> words_;
};

struct alignas(internal::kPadBytes) Completed {
  std::atomic<Lsn> last_important{kInvalidLsn};  // this worker's latest finished important start
};

// Keeps the first violation's text and counts them all.
struct Violations {
  void Add(int64_t index, ReadVerdict verdict, Lsn value, Lsn previous, Lsn floor) {
    if (count++ == 0) {
      first = absl::StrCat("read ", index, ": ", std::string(ReadVerdictName(verdict)), " (value ", value, ", previous ", previous,
                           ", finished before the read ", floor, ")");
    }
  }
  int64_t count = 0;
  std::string first;
};

}  // namespace internal

template <LastImportantTracker T>
CheckResult CheckTracker(const CheckOptions& options) {
  const int workers = options.workers;
  const int64_t per_worker = options.inserts / workers;
  auto plan = [&](int w, int64_t i) { return CheckerHash(options.seed ^ (uint64_t(w) << 48) ^ uint64_t(i)); };
  // The WAL's end is known before the run: the sizes are the plan's.
  Lsn end = kFirstRecordLsn;
  for (int w = 0; w < workers; ++w) {
    for (int64_t i = 0; i < per_worker; ++i) end += CheckerRecordSize(plan(w, i));
  }
  internal::StartBitmap important_starts(end);
  std::vector<internal::Completed> completed(static_cast<size_t>(workers));
  std::vector<Lsn> last_start(static_cast<size_t>(workers), kInvalidLsn);
  std::vector<int64_t> counts(static_cast<size_t>(workers) * 2, 0);

  constexpr size_t kRingBytes = size_t{1} << 20;
  auto ring = std::make_unique<std::byte[]>(kRingBytes + kRecordAlign);
  auto wal = std::make_unique<Wal<T>>(options.locks, std::span<std::byte>(ring.get(), kRingBytes));
  std::atomic<int> running{workers};
  std::atomic<bool> go{false};

  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      std::vector<std::byte> record(8192);
      Inserter me(w, options.locks);
      // Counted locally: shared counters would be a contended line of the
      // checker's own.
      int64_t important_count = 0, holding_all_count = 0;
      Lsn last = kInvalidLsn;
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int64_t i = 0; i < per_worker; ++i) {
        const uint64_t h = plan(w, i);
        const bool important = static_cast<int>((h >> 20) % 100) >= options.unimportant_percent;
        const bool all = options.holding_all_every > 0 && (h >> 40) % options.holding_all_every == 0;
        const std::span<const std::byte> r(record.data(), CheckerRecordSize(h));
        const Lsn start = all ? wal->InsertHoldingAll(r, important) : wal->Insert(me, r, important);
        if (!important) continue;
        important_starts.Set(start);
        completed[static_cast<size_t>(w)].last_important.store(start, std::memory_order_release);
        last = start;
        ++important_count;
        holding_all_count += all;
      }
      last_start[static_cast<size_t>(w)] = last;
      counts[static_cast<size_t>(w) * 2] = important_count;
      counts[static_cast<size_t>(w) * 2 + 1] = holding_all_count;
      running.fetch_sub(1, std::memory_order_release);
    });
  }

  CheckResult result;
  internal::Violations violations;
  // Values whose start was not yet marked when read (their insert was still
  // between its Record and its return): judged once every inserter is done.
  std::vector<std::pair<int64_t, Lsn>> unmarked;
  go.store(true, std::memory_order_release);
  Lsn previous = kInvalidLsn;
  while (running.load(std::memory_order_acquire) > 0) {
    Lsn floor = kInvalidLsn;
    for (const internal::Completed& c : completed) floor = std::max(floor, c.last_important.load(std::memory_order_acquire));
    const Lsn value = wal->LastImportant();
    const int64_t index = result.reads++;
    if (ReadVerdict v = JudgeRead(previous, floor, value); v != ReadVerdict::kOk) {
      violations.Add(index, v, value, previous, floor);
    }
    if (value != kInvalidLsn && !important_starts.Has(value) && (unmarked.empty() || unmarked.back().second != value) &&
        unmarked.size() < (size_t{1} << 20)) {
      unmarked.emplace_back(index, value);
    }
    previous = std::max(previous, value);
  }
  for (std::thread& t : threads) t.join();
  for (const auto& [index, lsn] : unmarked) {
    if (!important_starts.Has(lsn)) violations.Add(index, ReadVerdict::kNotImportant, lsn, previous, kInvalidLsn);
  }
  // The end state: every important record is in, so the value is exactly the
  // last important start.
  Lsn newest = kInvalidLsn;
  for (Lsn s : last_start) newest = std::max(newest, s);
  const Lsn final_value = wal->LastImportant();
  if (final_value != newest) {
    violations.Add(result.reads, final_value < newest ? ReadVerdict::kBehindCompleted : ReadVerdict::kNotImportant,
                   final_value, previous, newest);
  }
  result.inserts = per_worker * workers;
  for (int w = 0; w < workers; ++w) {
    result.important += counts[static_cast<size_t>(w) * 2];
    result.holding_all += counts[static_cast<size_t>(w) * 2 + 1];
  }
  result.violations = violations.count;
  result.first_violation = violations.first;
  return result;
}

}  // namespace backendlab::xlog

#endif  // BACKENDLAB_XLOG_CHECKER_H_
