// Randomised model tests: each refcount layout against a std::map reference, >10^6 operations.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "buffers/refcount_table.h"
#include "buffers/scan_kernels.h"
#include "gtest/gtest.h"
#include "tests/buffers/layout_test_types.h"

namespace backendlab::buffers {
namespace {

using test_util::CountOrMinusOne;
using test_util::OverflowEntriesOf;

// Small, so the O(NBuffers) HeldCount and FindLeaks of `array` and `bytes` can be
// compared often and the suite stays quick under ASan.
constexpr uint32_t kNBuffers = 1000;
constexpr uint64_t kSeeds[] = {1, 2, 3, 4};
constexpr int kOpsPerSeed = 400'000;
static_assert(kOpsPerSeed * std::size(kSeeds) >= 1'000'000, "at least 10^6 operations per layout");
constexpr int kFullCheckEvery = 1000;
// One buffer per seed is pinned this far above its count and back, so `bytes`
// crosses 255 (into its overflow map) and 65536 (past 16 bits) both ways.
constexpr int32_t kTowerHeight = 70'000;
// Buffers the "hot" pins choose from: more than the 8 inline entries of `hash`.
constexpr int kHotBuffers = 40;
// The hash layout's inline entries; above this many held, it must overflow.
constexpr size_t kInline = 8;

template <RefCountTable T>
class ModelRun {
 public:
  explicit ModelRun(uint64_t seed) : seed_(seed), rng_(seed) {}

  ::testing::AssertionResult Run() {
    absl::StatusOr<T> created = T::Create(kNBuffers);
    if (!created.ok()) return Fail() << "Create: " << created.status();
    table_ = std::make_unique<T>(*std::move(created));

    // The hot pool always includes the first and the last buffer.
    hot_ = {0, kNBuffers - 1};
    while (hot_.size() < kHotBuffers) {
      const BufferId b = Uniform(kNBuffers);
      if (std::find(hot_.begin(), hot_.end(), b) == hot_.end()) hot_.push_back(b);
    }
    tower_start_ = kOpsPerSeed / 4 + static_cast<int>(Uniform(kOpsPerSeed / 4));
    target_held_ = NewTarget();

    for (op_ = 0; op_ < kOpsPerSeed; ++op_) {
      if (auto r = Step(); !r) return r;
      if (auto r = CheckOverflow(); !r) return r;
      if (op_ % kFullCheckEvery == 0) {
        if (auto r = CheckFull(); !r) return r;
      }
      // Now and then the table changes hands, as a StatusOr'd table does.
      if (op_ % 100'000 == 50'000) {
        table_ = std::make_unique<T>(std::move(*table_));
        if (auto r = CheckFull(); !r) return r;
      }
    }
    if (tower_.phase != Tower::kDone) return Fail() << "the tower never finished";
    if (tower_peak_ < kTowerHeight) return Fail() << "tower peak " << tower_peak_;

    // Drain everything by unpins, then the table must be empty.
    while (!model_.empty()) {
      if (auto r = UnpinOp(model_.begin()->first); !r) return r;
      if (auto r = CheckOverflow(); !r) return r;
    }
    if (auto r = CheckFull(); !r) return r;
    if (OverflowEntriesOf(*table_) != 0) return Fail() << "overflow entries left after draining";

    if constexpr (T::kLayout == Layout::kHash || T::kLayout == Layout::kHashKeys) {
      if (max_overflow_ == 0) return Fail() << "the hash overflow map was never used";
      if (!overflow_back_to_zero_) return Fail() << "the hash overflow map never emptied again";
    }
    if constexpr (T::kLayout == Layout::kBytes) {
      if (max_overflow_ == 0) return Fail() << "the bytes overflow map was never used";
      if (!overflow_back_to_zero_) return Fail() << "the bytes overflow map never emptied again";
    }
    return ::testing::AssertionSuccess();
  }

 private:
  struct Tower {
    enum Phase { kNotStarted, kUp, kDown, kDone } phase = kNotStarted;
    BufferId buffer = 0;
    int32_t base = 0;  // count to return to
  };

  ::testing::AssertionResult Fail() {
    return ::testing::AssertionFailure() << LayoutName(T::kLayout) << " seed " << seed_ << " op " << op_ << ": ";
  }

  uint32_t Uniform(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  size_t NewTarget() { return kInline + 1 + Uniform(32); }

  int32_t ModelCount(BufferId b) const {
    auto it = model_.find(b);
    return it == model_.end() ? 0 : it->second;
  }

  ::testing::AssertionResult Step() {
    const uint32_t r = Uniform(1000);
    if (tower_.phase == Tower::kNotStarted && op_ >= tower_start_) {
      tower_.phase = Tower::kUp;
      tower_.buffer = hot_[Uniform(kHotBuffers)];
      tower_.base = ModelCount(tower_.buffer);
    }
    if (TowerActive() && r < 900) return TowerStep();
    if (r < 15) return InvalidUnpin();
    if (r < 30) return OutOfRangeOp();
    if (r < 60) return PinOp(Uniform(kNBuffers));  // anywhere, not only the hot pool
    if (r == 999 && Uniform(20) == 0 && !TowerActive()) {
      return ReleaseAllOp();
    }

    const size_t held = HeldExcludingTower();
    if (growing_ && held >= target_held_) growing_ = false;
    if (!growing_ && held == 0) {
      growing_ = true;
      target_held_ = NewTarget();
    }
    const bool pin = Uniform(100) < (growing_ ? 65u : 30u);
    if (pin || held == 0) return PinOp(hot_[Uniform(kHotBuffers)]);
    return UnpinOp(RandomHeldExcludingTower());
  }

  bool TowerActive() const { return tower_.phase == Tower::kUp || tower_.phase == Tower::kDown; }

  // Ordinary unpins leave the tower's buffer alone while it climbs and descends.
  size_t HeldExcludingTower() const {
    return model_.size() - (TowerActive() && model_.contains(tower_.buffer) ? 1 : 0);
  }

  BufferId RandomHeldExcludingTower() {
    auto it = std::next(model_.begin(), static_cast<std::ptrdiff_t>(Uniform(static_cast<uint32_t>(model_.size()))));
    if (TowerActive() && it->first == tower_.buffer) {
      if (++it == model_.end()) it = model_.begin();
    }
    return it->first;
  }

  ::testing::AssertionResult TowerStep() {
    const int32_t count = ModelCount(tower_.buffer);
    if (tower_.phase == Tower::kUp) {
      if (count >= tower_.base + kTowerHeight) {
        tower_.phase = Tower::kDown;
      } else {
        return PinOp(tower_.buffer);
      }
    }
    if (count <= tower_.base) {
      tower_.phase = Tower::kDone;
      return ::testing::AssertionSuccess();
    }
    return UnpinOp(tower_.buffer);
  }

  ::testing::AssertionResult PinOp(BufferId b) {
    const int32_t before = ModelCount(b);
    if (absl::Status s = table_->Pin(b); !s.ok()) {
      return Fail() << "Pin(" << b << ") at count " << before << ": " << s;
    }
    model_[b] = before + 1;
    if (before + 1 == 255) ++big_;
    if (tower_.phase == Tower::kUp && b == tower_.buffer) tower_peak_ = std::max(tower_peak_, before + 1 - tower_.base);
    return CheckCounts(b);
  }

  ::testing::AssertionResult UnpinOp(BufferId b) {
    const int32_t before = ModelCount(b);
    if (absl::Status s = table_->Unpin(b); !s.ok()) {
      return Fail() << "Unpin(" << b << ") at count " << before << ": " << s;
    }
    if (before == 1) {
      model_.erase(b);
    } else {
      model_[b] = before - 1;
    }
    if (before == 255) --big_;
    return CheckCounts(b);
  }

  // An unpin of a buffer that is not pinned: FailedPrecondition, nothing changes.
  ::testing::AssertionResult InvalidUnpin() {
    BufferId b = Uniform(kNBuffers);
    while (model_.contains(b)) b = Uniform(kNBuffers);
    const absl::Status s = table_->Unpin(b);
    if (!absl::IsFailedPrecondition(s)) return Fail() << "Unpin(" << b << ") of an unpinned buffer gave " << s;
    return CheckUnchanged(b);
  }

  // Any call with a buffer id >= NBuffers: OutOfRange, nothing changes.
  ::testing::AssertionResult OutOfRangeOp() {
    static constexpr BufferId kFixed[] = {kNBuffers, kNBuffers + 1, kMaxNBuffers - 1, kMaxNBuffers, UINT32_MAX};
    const BufferId b = Uniform(2) == 0 ? kFixed[Uniform(std::size(kFixed))] : kNBuffers + Uniform(1u << 20);
    absl::Status s;
    switch (Uniform(3)) {
      case 0: s = table_->Pin(b); break;
      case 1: s = table_->Unpin(b); break;
      default: s = table_->Count(b).status(); break;
    }
    if (!absl::IsOutOfRange(s)) return Fail() << "call with buffer " << b << " gave " << s;
    return CheckUnchanged(std::nullopt);
  }

  ::testing::AssertionResult ReleaseAllOp() {
    table_->ReleaseAll();
    model_.clear();
    big_ = 0;
    return CheckFull();
  }

  // After every pin or unpin: the touched buffer and one random other.
  ::testing::AssertionResult CheckCounts(BufferId b) {
    if (CountOrMinusOne(*table_, b) != ModelCount(b)) {
      return Fail() << "Count(" << b << ") = " << CountOrMinusOne(*table_, b) << ", model " << ModelCount(b);
    }
    const BufferId other = Uniform(kNBuffers);
    if (CountOrMinusOne(*table_, other) != ModelCount(other)) {
      return Fail() << "Count(" << other << ") = " << CountOrMinusOne(*table_, other) << ", model "
                    << ModelCount(other);
    }
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult CheckUnchanged(std::optional<BufferId> b) {
    if (b && CountOrMinusOne(*table_, *b) != 0) return Fail() << "Count(" << *b << ") changed by a failed call";
    if (table_->HeldCount() != model_.size()) {
      return Fail() << "HeldCount " << table_->HeldCount() << " after a failed call, model " << model_.size();
    }
    return ::testing::AssertionSuccess();
  }

  // O(1) after every operation: the overflow map is as big as it may be.
  ::testing::AssertionResult CheckOverflow() {
    const size_t overflow = OverflowEntriesOf(*table_);
    if constexpr (T::kLayout == Layout::kBytes) {
      // Exactly the buffers whose count is 255 or more.
      if (overflow != big_) return Fail() << "OverflowEntries " << overflow << ", model " << big_;
    }
    if constexpr (T::kLayout == Layout::kHash || T::kLayout == Layout::kHashKeys) {
      // Every held buffer is inline (at most 8) or in the map, never both.
      const size_t held = model_.size();
      if (overflow > held || overflow + kInline < held) {
        return Fail() << "OverflowEntries " << overflow << " with " << held << " held";
      }
    }
    if (overflow > 0) max_overflow_ = std::max(max_overflow_, overflow);
    if (overflow == 0 && max_overflow_ > 0) overflow_back_to_zero_ = true;
    return ::testing::AssertionSuccess();
  }

  // Every kFullCheckEvery operations: HeldCount and FindLeaks with every kernel.
  ::testing::AssertionResult CheckFull() {
    if (table_->HeldCount() != model_.size()) {
      return Fail() << "HeldCount " << table_->HeldCount() << ", model " << model_.size();
    }
    std::vector<Leak> expected;
    for (const auto& [buffer, count] : model_) expected.push_back({buffer, count});
    for (ScanKernel kernel : kAllScanKernels) {
      const std::vector<Leak> leaks = table_->FindLeaks(kernel);
      if (leaks != expected) {
        auto result = Fail() << "FindLeaks(" << ScanKernelName(kernel) << ") has " << leaks.size()
                             << " leaks, model " << expected.size();
        for (size_t i = 0; i < std::min(leaks.size(), expected.size()); ++i) {
          if (leaks[i] != expected[i]) {
            return result << "; first difference at " << i << ": [" << leaks[i].buffer << "]=" << leaks[i].count
                          << " vs [" << expected[i].buffer << "]=" << expected[i].count;
          }
        }
        return result;
      }
    }
    return ::testing::AssertionSuccess();
  }

  const uint64_t seed_;
  std::mt19937_64 rng_;
  std::unique_ptr<T> table_;  // on the heap: GCC 12 warns falsely on std::optional<HashRefCount>
  std::map<BufferId, int32_t> model_;  // only buffers with a non-zero count
  size_t big_ = 0;                     // model buffers with count >= 255
  std::vector<BufferId> hot_;
  bool growing_ = true;
  size_t target_held_ = 0;
  int op_ = 0;
  int tower_start_ = 0;
  Tower tower_;
  int32_t tower_peak_ = 0;  // highest count reached above the tower's base
  size_t max_overflow_ = 0;
  bool overflow_back_to_zero_ = false;
};

template <typename T>
class RefCountModelTest : public ::testing::Test {};
TYPED_TEST_SUITE(RefCountModelTest, test_util::AllLayoutTypes, test_util::LayoutTypeName);

TYPED_TEST(RefCountModelTest, MatchesReferenceMapOverRandomOperations) {
  for (uint64_t seed : kSeeds) {
    ModelRun<TypeParam> run(seed);
    ASSERT_TRUE(run.Run());
  }
}

}  // namespace
}  // namespace backendlab::buffers
